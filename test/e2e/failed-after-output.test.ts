/**
 * A provider that says, inside a 200 stream and after some output, that the answer failed (a
 * Responses `response.failed`, Anthropic's `event: error`, a Chat Completions error chunk even when
 * `data: [DONE]` follows it): the client gets the stream as sent, and
 * the log records a failed response with the provider's own message, not a success. The same request
 * sent again then continues the chat, as after any answer that never arrived whole.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream, type SseEvent } from '../fake-provider/fake-bodies.ts';
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
    // Counted as an answer cut short by the provider, under its error code.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(
      metrics,
      /^oda_requests_cut_total\{route="\/v1\/responses",reason="provider-error:server_error"\} 1$/m,
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

  // Recorded shapes of an error inside a Chat Completions stream, each closed with [DONE] as the
  // provider sends it: the [DONE] ends the stream, not the failure.
  const partial = {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    model: 'gpt-test',
    choices: [{ index: 0, delta: { role: 'assistant', content: 'Partial ans' }, finish_reason: null }],
  };
  const chatErrors: Array<[string, object, string]> = [
    [
      'vLLM {"error":{...}}',
      { error: { message: 'CUDA out of memory', type: 'InternalServerError', param: null, code: 500 } },
      'CUDA out of memory',
    ],
    [
      'a bare {"object":"error"}',
      { object: 'error', message: 'CUDA out of memory', type: 'InternalServerError', param: null, code: 500 },
      'CUDA out of memory',
    ],
    [
      'OpenRouter error chunk with finish_reason "error"',
      {
        id: 'chatcmpl-1',
        object: 'chat.completion.chunk',
        error: { code: 'server_error', message: 'Provider disconnected unexpectedly' },
        choices: [{ index: 0, delta: { content: '' }, finish_reason: 'error' }],
      },
      'Provider disconnected unexpectedly',
    ],
  ];
  for (const [name, errorChunk, message] of chatErrors) {
    test(`Chat Completions: ${name} then [DONE] is a failed answer; the retry continues the chat`, async () => {
      const chat = `chat-error-${name.replace(/\W+/g, '-')}`;
      const body = { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] };
      const events: SseEvent[] = [
        { data: JSON.stringify(partial) },
        { data: JSON.stringify(errorChunk) },
        { data: '[DONE]' },
      ];
      gw.fake.script({ sse: events });
      const res = await post(gw, '/v1/chat/completions', chat, body);
      assert.equal(res.status, 200);
      assert.equal(
        await res.text(),
        events.map((e) => `data: ${e.data}\n\n`).join(''),
        'the client gets the stream byte for byte',
      );
      const responses = (await getEvents(gw.url, chat)).filter(
        (e) => e.type === 'response',
      ) as unknown as LoggedResponse[];
      assert.deepEqual(
        responses.map((r) => [r.ok, r.error]),
        [[false, message]],
      );

      // The client (the official SDK) sends the same history again: the same chat, not a branch.
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
      const { data: stream, response } = await client.chat.completions
        .create(body as OpenAI.ChatCompletionCreateParamsStreaming, { headers: { 'x-session-id': chat } })
        .withResponse();
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.ok(text.length > 0);
      assert.equal(response.headers.get('x-session-id'), chat);
      const after = (await getEvents(gw.url, chat)).filter(
        (e) => e.type === 'response',
      ) as unknown as LoggedResponse[];
      assert.deepEqual(
        after.map((r) => r.ok),
        [false, true],
      );
    });
  }

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

  test('Anthropic: a stream cut before any content logs its failed response and no empty answer', async () => {
    const chat = 'anthropic-cut-before-content';
    const [messageStart] = anthropicStream('claude-test', ['Hel']);
    // Every attempt: message_start, then the connection drops.
    const cut = () => ({ sse: [messageStart!, { event: 'ping', data: '{"type":"ping"}' }], resetAfter: 2 });
    gw.fake.script(cut(), cut(), cut());
    const res = await post(gw, '/v1/messages', chat, {
      model: 'claude-test',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await res.text().catch(() => undefined);
    const events = await getEvents(gw.url, chat);
    const messages = events.filter((e) => e.type === 'message') as unknown as Array<{
      role: string;
      content: unknown[];
    }>;
    assert.deepEqual(
      messages.map((m) => [m.role, m.content.length]),
      [['user', 1]],
      'no empty model message',
    );
    const responses = events.filter((e) => e.type === 'response') as unknown as LoggedResponse[];
    assert.deepEqual(
      responses.map((r) => r.ok),
      [false],
    );
  });
});
