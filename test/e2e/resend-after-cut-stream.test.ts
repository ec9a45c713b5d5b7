/**
 * A stream cut short after some of its answer, then the same request again (Codex reconnects on its
 * own; any agent retries a dropped stream): the chat goes on in place. The cut answers stay in the
 * log with their failed responses, the whole answer follows, and the next turn continues the chat.
 * A resend after an answer that did arrive whole is still a regeneration (its own branch).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream, openaiStream } from '../fake-provider/fake-bodies.ts';
import { getEvents, getJson } from '../helpers/sdk-chat-drivers.ts';

type Format = 'anthropic' | 'openai';
const WHOLE = ['Hello', ' from', ' the', ' fake', ' provider.'];

/** A streamed request of `history`, as each format's client sends it; the chat it was logged in. */
async function send(gw: TestGateway, format: Format, chat: string, history: string[]): Promise<string> {
  const messages = history.map((text, i) => ({ role: i % 2 ? 'assistant' : 'user', content: text }));
  const res = await fetch(`${gw.url}${format === 'anthropic' ? '/v1/messages' : '/v1/chat/completions'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': chat },
    body: JSON.stringify(
      format === 'anthropic'
        ? { model: 'claude-test', max_tokens: 10, stream: true, messages }
        : { model: 'gpt-test', stream: true, messages },
    ),
  });
  assert.equal(res.status, 200);
  await res.text();
  // The next request starts later than this answer was logged (as a user's retry does).
  gw.clock.advance(1000);
  return res.headers.get('x-session-id') ?? '';
}

/** The provider's stream, cut after its first text piece (no closing event). */
function cutStream(format: Format) {
  return format === 'anthropic'
    ? anthropicStream('claude-test', ['Hel']).slice(0, 4)
    : openaiStream('gpt-test', ['Hel']).slice(0, 2);
}

describe('a resend after a stream cut short continues the chat', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw.close();
  });

  for (const format of ['anthropic', 'openai'] as const) {
    test(`${format}: two cut streams, the resend, the next turn: one chat, nothing lost`, async () => {
      const chat = `cut-${format}`;
      gw.fake.script({ sse: cutStream(format) }, { sse: cutStream(format) });
      assert.equal(await send(gw, format, chat, ['q1']), chat);
      assert.equal(await send(gw, format, chat, ['q1']), chat);
      assert.equal(await send(gw, format, chat, ['q1']), chat);
      assert.equal(await send(gw, format, chat, ['q1', WHOLE.join(''), 'q2']), chat);

      const events = await getEvents(gw.url, chat);
      const responses = events.filter((e) => e.type === 'response') as Array<{ ok: boolean }>;
      assert.deepEqual(
        responses.map((r) => r.ok),
        [false, false, true, true],
      );
      const texts = events.flatMap((e) =>
        e.type === 'message' ? [e.content.map((p) => (p.kind === 'text' ? p.text : p.kind)).join('')] : [],
      );
      assert.deepEqual(texts, ['q1', 'Hel', 'Hel', WHOLE.join(''), 'q2', WHOLE.join('')]);
      const { body } = await getJson<{ data: Array<{ id: string }> }>(`${gw.url}/v1/sessions?limit=100`);
      assert.deepEqual(
        body.data.map((s) => s.id).filter((id) => id.startsWith(chat)),
        [chat],
        'no branch',
      );
    });
  }

  test('a resend after an answer that arrived whole is still a regeneration: its own branch', async () => {
    const chat = 'whole-then-again';
    assert.equal(await send(gw, 'anthropic', chat, ['q1']), chat);
    const again = await send(gw, 'anthropic', chat, ['q1']);
    assert.ok(again.startsWith(`${chat}.`), again);
  });
});
