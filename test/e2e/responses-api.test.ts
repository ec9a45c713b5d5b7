// POST /v1/responses through the whole corridor with the official openai SDK (SPEC section 9):
// streamed and not, a tool round trip through function_call_output, Codex's session headers,
// previous_response_id (also without input), a prompt template without input, overflow trimming
// and image set-aside (also when the refusal comes as a response.failed stream event), with what
// the client got and what the provider received.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { makePng } from '../../chat-log/test-images.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import {
  responsesFunctionCall,
  responsesMessage,
  responsesReasoning,
} from '../fake-provider/fake-responses.ts';

const png = (seed: number) => `data:image/png;base64,${makePng(4, 4, seed).toString('base64')}`;

function client(gw: TestGateway, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0, defaultHeaders: headers });
}

describe('the Responses API through the gateway', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  test('a tool round trip, not streamed, lands in one chat named by Codex headers', async () => {
    const session = '019a0000-0000-7000-8000-00000000c0de';
    const headers = {
      'session-id': session,
      'thread-id': session,
      'x-codex-turn-metadata': JSON.stringify({
        session_id: session,
        thread_id: session,
        turn_id: 't1',
        request_kind: 'turn',
      }),
    };
    const c = client(gw, headers);
    const reasoning = responsesReasoning('thinking', 'gAAAA-encrypted-blob', 'rs_1');
    const call = responsesFunctionCall('shell', '{"command":["ls"]}', 'call_1');
    gw.fake.script({ responses: { output: [reasoning, call] } });
    const first = await c.responses
      .create({
        model: 'gpt-5-codex',
        instructions: 'You are Codex.',
        store: false,
        include: ['reasoning.encrypted_content'],
        tools: [
          { type: 'function', name: 'shell', parameters: { type: 'object', properties: {} }, strict: false },
        ],
        input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list the files' }] }],
      })
      .withResponse();
    assert.equal(first.response.headers.get('x-session-id'), `session:${session}`);
    assert.equal(first.response.headers.get('x-oda-attempts'), '1');
    assert.deepEqual(
      first.data.output.map((o) => o.type),
      ['reasoning', 'function_call'],
    );

    // Codex sends the whole history back (store: false), reasoning with its encrypted content.
    gw.fake.script({ responses: { output: [responsesMessage('There are two files.', 'msg_2')] } });
    const input = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'list the files' }] },
      ...first.data.output,
      { type: 'function_call_output', call_id: 'call_1', output: 'a.txt\nb.txt' },
    ];
    const second = await c.responses
      .create({
        model: 'gpt-5-codex',
        instructions: 'You are Codex.',
        store: false,
        input: input as OpenAI.Responses.ResponseInput,
      })
      .withResponse();
    assert.equal(second.response.headers.get('x-session-id'), `session:${session}`);
    assert.equal(second.data.output_text, 'There are two files.');

    // The provider received the reasoning item byte for byte (encrypted content included).
    const sent = gw.fake.requestsTo('/v1/responses').at(-1)!;
    assert.deepEqual((sent.json as { input: unknown[] }).input, JSON.parse(JSON.stringify(input)));

    const events = await sessionEvents(gw.url, `session:${session}`);
    const requests = eventsOfType(events, 'request');
    assert.equal(requests.length, 2);
    assert.equal(requests[0]!.format, 'responses');
    const responses = eventsOfType(events, 'response');
    assert.ok(responses.every((r) => typeof r.responseId === 'string' && r.responseId.startsWith('resp_')));
    const messages = eventsOfType(events, 'message');
    // Every item is logged once, in order: user, reasoning, function call, its output, answer.
    assert.equal(
      messages.length,
      5,
      JSON.stringify(messages.map((m) => [m.role, m.content.map((p) => p.kind)])),
    );
    const kinds = messages.map((m) => `${m.role}:${m.content.map((p) => p.kind).join('+')}`);
    assert.equal(kinds[0], 'user:text');
    assert.equal(kinds[3], 'tool:tool-result');
    assert.ok(
      JSON.stringify(messages[1]).includes('gAAAA-encrypted-blob'),
      'the reasoning item is kept whole',
    );
  });

  test('streamed: events pass through as sent and the answer is logged', async () => {
    gw.fake.script({ responses: { output: [responsesMessage('streamed answer', 'msg_s')] } });
    const c = client(gw, { 'x-session-id': 'resp-stream' });
    const stream = await c.responses.create({ model: 'gpt-5', input: 'hello', stream: true });
    const types: string[] = [];
    for await (const ev of stream) types.push(ev.type);
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.ok(types.includes('response.output_text.delta'));
    const events = await sessionEvents(gw.url, 'resp-stream');
    const answer = eventsOfType(events, 'message').at(-1)!;
    assert.equal(answer.role, 'model');
    assert.ok(JSON.stringify(answer.content).includes('streamed answer'));
  });

  test('previous_response_id continues the chat that logged that response', async () => {
    gw.fake.script({ responses: { output: [responsesMessage('first', 'msg_a')] } });
    const c = client(gw);
    const a = await c.responses.create({ model: 'gpt-5', input: 'remember the number 7' }).withResponse();
    const chat = a.response.headers.get('x-session-id')!;
    gw.fake.script({ responses: { output: [responsesMessage('it was 7', 'msg_b')] } });
    const b = await c.responses
      .create({ model: 'gpt-5', previous_response_id: a.data.id, input: 'what was the number?' })
      .withResponse();
    assert.equal(b.response.headers.get('x-session-id'), chat);
    const texts = eventsOfType(await sessionEvents(gw.url, chat), 'message').map((m) =>
      m.content.map((p) => ('text' in p ? p.text : '')).join(''),
    );
    assert.deepEqual(texts, ['remember the number 7', 'first', 'what was the number?', 'it was 7']);
  });

  test('previous_response_id of an earlier response forks: a branch from that answer, each path going on in its own chat', async () => {
    const c = client(gw);
    const say = async (text: string, previous: string | undefined, answer: string) => {
      gw.fake.script({
        responses: { output: [responsesMessage(answer, `msg_${answer.replace(/\W/g, '')}`)] },
      });
      const r = await c.responses
        .create({ model: 'gpt-5', input: text, ...(previous ? { previous_response_id: previous } : {}) })
        .withResponse();
      gw.clock.advance(1000);
      return { id: r.data.id, chat: r.response.headers.get('x-session-id')! };
    };
    const textsOf = async (chat: string) =>
      eventsOfType(await sessionEvents(gw.url, chat), 'message').map((m) =>
        m.content.map((p) => ('text' in p ? p.text : '')).join(''),
      );
    const root = await say('fork root', undefined, 'root answer');
    const one = await say('path one', root.id, 'answer one');
    assert.equal(one.chat, root.chat);
    // Back to the root's answer: the model never saw path one, so neither does this path's log.
    const two = await say('path two', root.id, 'answer two');
    assert.ok(two.chat.startsWith(`${root.chat}.`), two.chat);
    assert.deepEqual(await textsOf(root.chat), ['fork root', 'root answer', 'path one', 'answer one']);
    assert.deepEqual(await textsOf(two.chat), ['fork root', 'root answer', 'path two', 'answer two']);
    // Each path goes on where its last response was logged.
    assert.equal((await say('more of one', one.id, 'answer one+')).chat, root.chat);
    assert.equal((await say('more of two', two.id, 'answer two+')).chat, two.chat);
    assert.deepEqual((await textsOf(two.chat)).slice(-2), ['more of two', 'answer two+']);
  });

  test('without input: a prompt template is answered and logged, streamed too', async () => {
    for (const stream of [false, true]) {
      const session = `resp-prompt-${stream}`;
      gw.fake.script({ responses: { output: [responsesMessage('from the template', `msg_p${stream}`)] } });
      const c = client(gw, { 'x-session-id': session });
      const { data, response } = await c.responses
        .create({ model: 'gpt-5', prompt: { id: 'pmpt_1', variables: { city: 'Oslo' } }, stream })
        .withResponse();
      let text = '';
      if (stream) {
        for await (const ev of data as AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) {
          if (ev.type === 'response.output_text.delta') text += ev.delta;
        }
      } else text = (data as OpenAI.Responses.Response).output_text;
      assert.equal(response.status, 200);
      assert.equal(text, 'from the template');
      assert.equal(response.headers.get('x-session-id'), session);
      const sent = gw.fake.requestsTo('/v1/responses').at(-1)!.json as Record<string, unknown>;
      assert.equal('input' in sent, false, 'no input invented upstream');
      assert.deepEqual(sent.prompt, { id: 'pmpt_1', variables: { city: 'Oslo' } });
      const events = await sessionEvents(gw.url, session);
      const requests = eventsOfType(events, 'request');
      assert.equal(requests.length, 1);
      assert.deepEqual(requests[0]!.settings.prompt, { id: 'pmpt_1', variables: { city: 'Oslo' } });
      const messages = eventsOfType(events, 'message');
      assert.deepEqual(
        messages.map((m) => m.role),
        ['model'],
        'only the answer: the request sent no message',
      );
    }
  });

  test('without input: previous_response_id continues the chat that logged that response', async () => {
    gw.fake.script({ responses: { output: [responsesMessage('pick a number', 'msg_n1')] } });
    const c = client(gw);
    const a = await c.responses.create({ model: 'gpt-5', input: 'play a game with me' }).withResponse();
    const chat = a.response.headers.get('x-session-id')!;
    // Another chat in between: the continuation must find its own, not the latest.
    await c.responses.create({ model: 'gpt-5', input: 'something else entirely' });
    gw.fake.script({ responses: { output: [responsesMessage('still waiting', 'msg_n2')] } });
    const b = await c.responses.create({ model: 'gpt-5', previous_response_id: a.data.id }).withResponse();
    assert.equal(b.response.status, 200);
    assert.equal(b.data.output_text, 'still waiting');
    assert.equal(b.response.headers.get('x-session-id'), chat);
    const sent = gw.fake.requestsTo('/v1/responses').at(-1)!.json as Record<string, unknown>;
    assert.equal('input' in sent, false, 'no input invented upstream');
    assert.equal(sent.previous_response_id, a.data.id);
    const events = await sessionEvents(gw.url, chat);
    assert.equal(eventsOfType(events, 'request').length, 2);
    assert.deepEqual(
      eventsOfType(events, 'message').map((m) => [
        m.role,
        m.content.map((p) => ('text' in p ? p.text : '')).join(''),
      ]),
      [
        ['user', 'play a game with me'],
        ['model', 'pick a number'],
        ['model', 'still waiting'],
      ],
    );
  });

  test('a malformed body is a 400 in OpenAI shape naming the field, and nothing is logged', async () => {
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'resp-bad' },
      body: JSON.stringify({ model: 'gpt-5', input: 42 }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { message: string; param: string } };
    assert.equal(body.error.param, 'input');
    assert.match(body.error.message, /input must be a string or an array/);
    assert.equal((await fetch(`${gw.url}/v1/sessions/resp-bad`)).status, 404);
  });

  test('a prompt template without model is a 400 saying the gateway needs the model; nothing is sent', async () => {
    const before = gw.fake.requests.length;
    // The SDK lets `model` out: the API would take the template's own model.
    const call = client(gw, { 'x-session-id': 'resp-no-model' }).responses.create({
      prompt: { id: 'pmpt_1', variables: { topic: 'otters' } },
    });
    await assert.rejects(call, (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.param, 'model');
      assert.match(e.message, /model is required: the gateway chooses the provider by model/);
      assert.match(e.message, /prompt template/);
      return true;
    });
    assert.equal(gw.fake.requests.length, before, 'the provider was not asked');
    assert.equal((await fetch(`${gw.url}/v1/sessions/resp-no-model`)).status, 404);
  });
});

describe('repairs on Responses items', () => {
  test('an image-limit refusal sets the oldest images aside without spending a retry, also from a response.failed stream event', async () => {
    for (const refusal of ['http', 'response.failed'] as const) {
      const gw = await startGateway({
        fake: { imageLimit: 1, responsesStreamRefusal: refusal },
        config: { retries: { maxRetries: 0 } },
      });
      try {
        const img = (seed: number) => ({
          type: 'input_image' as const,
          image_url: png(seed),
          detail: 'auto' as const,
        });
        const c = client(gw, { 'x-session-id': `resp-img-${refusal}` });
        const stream = await c.responses.create({
          model: 'gpt-5',
          stream: true,
          input: [
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'one' }, img(1)] },
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'two' }, img(2)] },
          ],
        });
        let text = '';
        for await (const ev of stream) if (ev.type === 'response.output_text.delta') text += ev.delta;
        assert.ok(text.length > 0, `${refusal}: the client got an answer`);
        const sent = gw.fake.requestsTo('/v1/responses');
        assert.equal(sent.length, 2, `${refusal}: refused once, then sent with one image set aside`);
        const last = JSON.stringify(sent[1]!.json);
        assert.equal(last.split('input_image').length - 1, 1, `${refusal}: one image left`);
        assert.match(last, /input_text/);
        const events = await sessionEvents(gw.url, `resp-img-${refusal}`);
        assert.equal(eventsOfType(events, 'image-set-aside').length, 1);
      } finally {
        await gw.close();
      }
    }
  });

  test('a context overflow trims the function_call_output and goes again without spending a retry', async () => {
    const gw = await startGateway({
      fake: { contextLimitChars: 20_000 },
      config: { retries: { maxRetries: 0 } },
    });
    try {
      const c = client(gw, { 'x-session-id': 'resp-overflow' });
      const big = 'x'.repeat(30_000);
      const r = await c.responses
        .create({
          model: 'gpt-5',
          input: [
            { type: 'message', role: 'user', content: 'run it' },
            { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}' },
            { type: 'function_call_output', call_id: 'c1', output: big },
          ] as OpenAI.Responses.ResponseInput,
        })
        .withResponse();
      assert.equal(r.response.status, 200);
      assert.equal(r.response.headers.get('x-oda-trimmed'), '1');
      const sent = gw.fake.requestsTo('/v1/responses');
      assert.equal(sent.length, 2);
      const output = (sent[1]!.json as { input: Array<{ output?: string }> }).input[2]!.output!;
      assert.ok(output.length < 10_000);
      assert.match(output, /\[\.\.\. tool result middle pruned \.\.\.\]/);
    } finally {
      await gw.close();
    }
  });
});
