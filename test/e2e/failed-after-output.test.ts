/**
 * A provider that says, inside a 200 stream and after some output, that the answer failed (a
 * Responses `response.failed`, Anthropic's `event: error`): the client gets the stream as sent, and
 * the log records a failed response with the provider's own message, not a success. The same request
 * sent again then continues the chat, as after any answer that never arrived whole.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream } from '../fake-provider/fake-bodies.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';
import { getEvents, getSession } from '../helpers/sdk-chat-drivers.ts';

interface LoggedResponse {
  type: 'response';
  ok: boolean;
  error?: string;
}

async function post(gw: TestGateway, path: string, chat: string, body: object): Promise<Response> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': chat },
    body: JSON.stringify(body),
  });
  gw.clock.advance(1000);
  return res;
}

describe('an answer the provider fails after its output started is logged as failed', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw.close();
  });

  test('Responses: response.failed after output text', async () => {
    const chat = 'failed-after-output';
    const body = { model: 'gpt-test', input: 'hi', stream: true };
    gw.fake.script({
      responses: {
        output: [responsesMessage('half an answer', 'msg_half')],
        status: 'failed',
        error: { code: 'server_error', message: 'The model failed mid-answer.' },
      },
    });
    const res = await post(gw, '/v1/responses', chat, body);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /half/);
    assert.match(text, /event: response\.failed/);

    const responses = (await getEvents(gw.url, chat)).filter(
      (e) => e.type === 'response',
    ) as unknown as LoggedResponse[];
    assert.deepEqual(
      responses.map((r) => [r.ok, r.error]),
      [[false, 'The model failed mid-answer.']],
    );
    const view = await getSession(gw.url, chat);
    const totals = (view.snapshot as unknown as { values: { totals: { failedResponseCount: number } } })
      .values.totals;
    assert.equal(totals.failedResponseCount, 1);

    // The same request again continues the chat (the failed answer stays in its log).
    const again = await post(gw, '/v1/responses', chat, body);
    assert.equal(again.headers.get('x-session-id'), chat);
    await again.text();
    const after = (await getEvents(gw.url, chat)).filter(
      (e) => e.type === 'response',
    ) as unknown as LoggedResponse[];
    assert.deepEqual(
      after.map((r) => r.ok),
      [false, true],
    );
  });

  test("Anthropic: an error event after output keeps the provider's message", async () => {
    const chat = 'anthropic-error-after-output';
    const events = anthropicStream('claude-test', ['Hel']).slice(0, 4);
    events.push({
      event: 'error',
      data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    });
    gw.fake.script({ sse: events });
    const res = await post(gw, '/v1/messages', chat, {
      model: 'claude-test',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /overloaded_error/);
    const responses = (await getEvents(gw.url, chat)).filter(
      (e) => e.type === 'response',
    ) as unknown as LoggedResponse[];
    assert.deepEqual(
      responses.map((r) => [r.ok, r.error]),
      [[false, 'Overloaded']],
    );
  });
});
