/**
 * The log holds every message the model receives (SPEC sections 6 and 10, chat log format v5): the
 * official Anthropic SDK sends what Claude Code sends (a `role: "system"` environment block inside
 * `messages`) plus blocks the gateway does not understand; the provider gets the request byte for
 * byte, and the chat log holds those messages in their place, the unknown blocks as `raw` parts
 * equal to the JSON sent. A streamed answer with server tool blocks, sent back by the client, is
 * recognised as the logged answer (no branch).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ContentPart, Event } from '../../chat-log/format/current.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { getEvents, getJson, ofType } from '../helpers/sdk-chat-drivers.ts';

const MODEL = 'claude-test';

/** Claude Code's environment block: about 10 KB of context sent as a system message. */
const ENVIRONMENT = `<system-reminder>\nWorking directory: /home/dev/app\n${'Recent file: src/app.ts\n'.repeat(420)}</system-reminder>`;

const serverToolUse = {
  type: 'server_tool_use',
  id: 'srvtoolu_01',
  name: 'web_search',
  input: { query: 'oda' },
};
const webSearchResult = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_01',
  content: [
    {
      type: 'web_search_result',
      url: 'https://example.com/oda',
      title: 'Oda',
      encrypted_content: 'EqgfCioIARgBIiQ3YTAw',
      page_age: null,
    },
  ],
};
const containerUpload = { type: 'container_upload', file_id: 'file_011CNha8iCJcU1wXNR6q4V8w' };
const futureBlock = {
  type: 'block_from_the_future',
  nested: { list: [1, 2.5, 'three', null, true], s: 'é\n' },
};

function answer(id: string, content: unknown[]) {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content,
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

/** A streamed answer: a web search the provider ran (server tool call and result), then text. */
function streamedSearch(id: string): SseEvent[] {
  const ev = (data: Record<string, unknown>): SseEvent => ({
    event: String(data.type),
    data: JSON.stringify(data),
  });
  return [
    ev({ type: 'message_start', message: { ...answer(id, []), stop_reason: null } }),
    ev({
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'server_tool_use', id: 'srvtoolu_02', name: 'web_search', input: {} },
    }),
    ev({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: '{"query":' },
    }),
    ev({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'input_json_delta', partial_json: '"more"}' },
    }),
    ev({ type: 'content_block_stop', index: 0 }),
    ev({
      type: 'content_block_start',
      index: 1,
      content_block: { ...webSearchResult, tool_use_id: 'srvtoolu_02' },
    }),
    ev({ type: 'content_block_stop', index: 1 }),
    ev({ type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } }),
    ev({ type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: 'Found more.' } }),
    ev({ type: 'content_block_stop', index: 2 }),
    ev({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 3 },
    }),
    ev({ type: 'message_stop' }),
  ];
}

/** The body text of every request the SDK sends, to compare with what the provider got. */
function recordingFetch(sent: string[]): typeof fetch {
  return async (input, init) => {
    if (typeof init?.body === 'string') sent.push(init.body);
    return fetch(input, init);
  };
}

const partsOf = (content: readonly ContentPart[]) =>
  content.map((p) =>
    p.kind === 'raw' ? { raw: p.value } : p.kind === 'text' ? { text: p.text } : { kind: p.kind },
  );

describe('the chat log holds every message the model receives', () => {
  let gw: TestGateway;
  before(async () => {
    // Prompt caching left off: the provider must get every request exactly as the client sent it.
    gw = await startGateway({ config: { promptCaching: { mode: 'off' } } });
  });
  after(() => gw.close());

  test('anthropic SDK: a system message inside messages and unknown blocks are logged in place, as sent', async () => {
    const sessionId = 'every-message-anthropic';
    const sent: string[] = [];
    const client = new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId },
      fetch: recordingFetch(sent),
    });
    // What Claude Code sends and the SDK's types do not describe: a system turn inside messages.
    const history: unknown[] = [
      { role: 'user', content: 'Look up oda and fix the test.' },
      { role: 'system', content: ENVIRONMENT },
    ];
    const create = (messages: unknown[]) =>
      client.messages.create({
        model: MODEL,
        max_tokens: 1024,
        system: 'You are Claude Code.',
        messages: messages as Anthropic.MessageParam[],
      });

    // Turn 1: the provider answers with a server tool call and its result (blocks kept raw).
    gw.fake.script({
      json: answer('msg_turn1', [serverToolUse, webSearchResult, { type: 'text', text: 'Found it.' }]),
    });
    const first = await create(history);
    history.push({ role: 'assistant', content: first.content });
    history.push({
      role: 'user',
      content: [
        containerUpload,
        futureBlock,
        { type: 'text', text: 'Now the test.', cache_control: { type: 'ephemeral' } },
      ],
    });

    // Turn 2: the history carries the answer back and blocks the gateway does not know; streamed.
    gw.fake.script({ sse: streamedSearch('msg_turn2') });
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 1024,
      system: 'You are Claude Code.',
      messages: history as Anthropic.MessageParam[],
    });
    const second = await stream.finalMessage();
    assert.equal(second.content.length, 3);
    history.push({ role: 'assistant', content: second.content });
    history.push({ role: 'user', content: 'Thanks.' });

    // Turn 3: the streamed answer comes back as the client rebuilt it.
    gw.fake.script({ json: answer('msg_turn3', [{ type: 'text', text: 'Done.' }]) });
    await create(history);

    // The provider received each request exactly as the client sent it.
    const received = gw.fake.requestsTo('/v1/messages');
    assert.equal(received.length, 3);
    assert.equal(sent.length, 3);
    received.forEach((r, i) => assert.equal(r.raw.toString('utf8'), sent[i], `request ${i + 1} unchanged`));
    const turn2 = received[1]!.json!.messages as Array<{ role: string; content: unknown }>;
    assert.equal(turn2[1]?.role, 'system');

    // The log: one chat, every message once, in its place.
    const events: Event[] = await getEvents(gw.url, sessionId);
    const messages = ofType(events, 'message');
    assert.deepEqual(
      messages.map((m) => m.role),
      ['user', 'system', 'model', 'user', 'model', 'user', 'model'],
    );
    assert.deepEqual(messages[1]?.content, [{ kind: 'text', text: ENVIRONMENT }]);
    assert.deepEqual(partsOf(messages[2]!.content), [
      { raw: serverToolUse },
      { raw: webSearchResult },
      { text: 'Found it.' },
    ]);
    // Unknown blocks are byte for byte the JSON sent (the cache breakpoint is not logged).
    const user2 = messages[3]!.content;
    assert.equal(
      JSON.stringify(user2.slice(0, 2).map((p) => (p.kind === 'raw' ? p.value : p))),
      JSON.stringify([containerUpload, futureBlock]),
    );
    assert.deepEqual(user2[2], { kind: 'text', text: 'Now the test.' });
    assert.deepEqual(partsOf(messages[4]!.content), [
      { raw: { ...serverToolUse, id: 'srvtoolu_02', input: { query: 'more' } } },
      { raw: { ...webSearchResult, tool_use_id: 'srvtoolu_02' } },
      { text: 'Found more.' },
    ]);
    // Each message is logged once: the answers sent back were recognised, nothing branched.
    assert.deepEqual(
      ofType(events, 'response').map((r) => [r.ok, r.responseId]),
      [
        [true, 'msg_turn1'],
        [true, 'msg_turn2'],
        [true, 'msg_turn3'],
      ],
    );
    const chats = await getJson<{ sessions: Array<{ id: string }> }>(`${gw.url}/v1/sessions`);
    assert.deepEqual(
      chats.body.sessions.map((s) => s.id).filter((id) => id.startsWith(sessionId)),
      [sessionId],
    );
  });

  test('openai SDK: late system and developer messages, names, unknown roles and parts, as sent', async () => {
    const sessionId = 'every-message-openai';
    const sent: string[] = [];
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'sk-test',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': sessionId },
      fetch: recordingFetch(sent),
    });
    const unknownPart = { type: 'part_from_the_future', data: { n: [1, 2] } };
    const messages: unknown[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Hi', name: 'alice' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'developer', content: 'Tools changed.' },
      { role: 'critic', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Look:' }, unknownPart] },
    ];
    gw.fake.script({
      json: {
        id: 'chatcmpl-every',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-test',
        choices: [{ index: 0, message: { role: 'assistant', content: 'OK.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 },
      },
    });
    await client.chat.completions.create({
      model: 'gpt-test',
      messages: messages as OpenAI.Chat.ChatCompletionMessageParam[],
    });
    const received = gw.fake.requestsTo('/v1/chat/completions');
    assert.equal(received.at(-1)?.raw.toString('utf8'), sent.at(-1));

    const logged = ofType(await getEvents(gw.url, sessionId), 'message');
    assert.deepEqual(
      logged.map((m) => [m.role, m.wire ?? null, partsOf(m.content)]),
      [
        ['user', { role: 'user', name: 'alice' }, [{ text: 'Hi' }]],
        ['model', null, [{ text: 'Hello.' }]],
        ['developer', null, [{ text: 'Tools changed.' }]],
        ['other', { role: 'critic' }, [{ text: 'Be brief.' }]],
        ['user', null, [{ text: 'Look:' }, { raw: unknownPart }]],
        ['model', null, [{ text: 'OK.' }]],
      ],
    );
    const [response] = ofType(await getEvents(gw.url, sessionId), 'response');
    assert.equal(response?.responseId, 'chatcmpl-every');
  });
});
