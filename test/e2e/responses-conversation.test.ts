/**
 * A Responses `conversation` names its chat (SPEC section 2, "Which chat a request belongs to"):
 * the provider holds the conversation and each turn sends only its new items, so every turn goes
 * on at the end of the chat `conversation:<id>`, in one chat, never a branch. An `x-session-id`
 * still wins. Through the official `openai` SDK, without teams (with teams a `conversation` is
 * refused: responses-teams-references.test.ts).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Event } from '../../chat-log/format/current.ts';
import { sessionEvents } from '../helpers/session-events.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

/** The texts of the chat's messages, `role: text`, in log order. */
function transcript(events: readonly Event[]): string[] {
  return events
    .filter((e): e is Extract<Event, { type: 'message' }> => e.type === 'message')
    .map((e) => `${e.role}: ${e.content.map((p) => (p.kind === 'text' ? p.text : '')).join('')}`);
}

describe('Responses conversation as the chat', () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway({ fake: { answer: 'noted' } });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
  });
  after(() => gw.close());

  test('each turn of one conversation goes on at the end of its chat, however it is named', async () => {
    const turn = async (conversation: string | { id: string }, input: string, prompt_cache_key?: string) => {
      const { response, data } = await client.responses
        .create({ model: 'gpt-5', conversation, input, ...(prompt_cache_key && { prompt_cache_key }) })
        .withResponse();
      assert.equal(data.output_text, 'noted');
      return response.headers.get('x-session-id');
    };
    assert.equal(await turn('conv_abc123', 'first question'), 'conversation:conv_abc123');
    assert.equal(await turn({ id: 'conv_abc123' }, 'second question'), 'conversation:conv_abc123');
    // The conversation names the chat before a prompt_cache_key does.
    assert.equal(await turn('conv_abc123', 'first question', 'some-key'), 'conversation:conv_abc123');
    // Another conversation that starts alike is another chat.
    assert.equal(await turn('conv_other', 'first question'), 'conversation:conv_other');

    const events = await sessionEvents(gw.url, 'conversation:conv_abc123');
    assert.deepEqual(transcript(events), [
      'user: first question',
      'model: noted',
      'user: second question',
      'model: noted',
      'user: first question',
      'model: noted',
    ]);
    const sessions = (await (await fetch(`${gw.url}/v1/sessions/conversation:conv_abc123`)).json()) as {
      conversations: { kind: string; children: unknown[] };
    };
    assert.equal(sessions.conversations.kind, 'main');
    assert.deepEqual(sessions.conversations.children, [], 'no branch');
    // What went upstream is the request as sent.
    assert.deepEqual(
      (gw.fake.requests.at(-1)!.json as { conversation?: unknown }).conversation,
      'conv_other',
    );
  });

  test('an x-session-id still names the chat; the turns go on at its end', async () => {
    const turn = async (input: string) =>
      (
        await client.responses
          .create(
            { model: 'gpt-5', conversation: 'conv_named', input },
            { headers: { 'x-session-id': 'named' } },
          )
          .withResponse()
      ).response.headers.get('x-session-id');
    assert.equal(await turn('one'), 'named');
    assert.equal(await turn('two'), 'named');
    assert.deepEqual(transcript(await sessionEvents(gw.url, 'named')), [
      'user: one',
      'model: noted',
      'user: two',
      'model: noted',
    ]);
  });

  test('a malformed conversation id names no chat (ignored, as other client ids are)', async () => {
    const { response } = await client.responses
      .create({ model: 'gpt-5', conversation: 'conv with spaces', input: 'hi' })
      .withResponse();
    assert.match(response.headers.get('x-session-id') ?? '', /^chat-/);
  });
});
