/**
 * A configured provider key never leaves the gateway inside a 200 answer either (SPEC section 14:
 * error bodies are logged and returned with any configured provider key masked). Providers report
 * failures inside an open stream: a Responses `response.failed` or `error` event before any output
 * (which the gateway turns into the HTTP error the provider would have answered), an error event
 * after output has started (passed on as it comes), Anthropic's `event: error`, an OpenAI chat
 * chunk holding `error`. Each is checked for what the client got, what the chat log holds and what
 * the gateway's own log lines say.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import type { SseEvent } from '../fake-provider/fake-bodies.ts';
import { createLogger } from '../../server/logger.ts';
import { Captured } from '../helpers/captured-log.ts';

const OPENAI_KEY = 'sk-openai-SECRET-0123456789';
const ANTHROPIC_KEY = 'sk-ant-SECRET-9876543210';

const sse = (type: string, body: Record<string, unknown>): SseEvent => ({
  event: type,
  data: JSON.stringify({ type, ...body }),
});
const created = sse('response.created', {
  sequence_number: 0,
  response: { id: 'resp_1', object: 'response', status: 'in_progress', model: 'gpt-test', output: [] },
});
const failed = (code: string, message: string): SseEvent =>
  sse('response.failed', {
    sequence_number: 1,
    response: {
      id: 'resp_1',
      object: 'response',
      status: 'failed',
      model: 'gpt-test',
      output: [],
      error: { code, message },
    },
  });
const textDelta = sse('response.output_text.delta', {
  sequence_number: 2,
  item_id: 'msg_1',
  output_index: 0,
  content_index: 0,
  delta: 'Hel',
});
const outputAdded = sse('response.output_item.added', {
  sequence_number: 1,
  output_index: 0,
  item: { id: 'msg_1', type: 'message', role: 'assistant', status: 'in_progress', content: [] },
});

describe('a provider key inside a 200 stream is masked for the client, the chat log and the logs', () => {
  let fake: FakeProvider;
  let gw: TestGateway;
  const logs = new Captured();
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        logLevel: 'trace',
        providers: [
          { name: 'p-openai', format: 'openai', baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY },
          { name: 'p-anthropic', format: 'anthropic', baseUrl: fake.url, apiKey: ANTHROPIC_KEY },
        ],
      },
      deps: { logger: createLogger('trace', logs) },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  /** Sends `body` to `path` with a session of its own; returns the answer and the chat log's raw text. */
  async function call(
    path: string,
    body: Record<string, unknown>,
    events: SseEvent[],
    session: string,
  ): Promise<{ status: number; text: string; log: string }> {
    fake.reset();
    fake.script({ sse: events });
    const r = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-session-id': session,
      },
      body: JSON.stringify({ ...body, stream: true }),
    });
    const text = await r.text();
    assert.ok(fake.requests.length >= 1, `the provider was called: ${r.status} ${text}`);
    const log = await (await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(session)}/events`)).text();
    assert.match(log, /"type":"response"/, `the chat log recorded the answer: ${log}`);
    return { status: r.status, text, log };
  }

  const responsesBody = { model: 'gpt-test', input: 'hi' };

  for (const [session, name, events] of [
    [
      'rs-failed',
      'a response.failed event naming the key',
      [created, failed('invalid_api_key', `Incorrect API key provided: ${OPENAI_KEY}.`)],
    ],
    [
      'rs-error',
      'a bare error event naming the key',
      [
        created,
        {
          event: 'error',
          data: JSON.stringify({
            type: 'error',
            sequence_number: 1,
            error: {
              type: 'invalid_request_error',
              code: 'invalid_api_key',
              message: `bad key ${OPENAI_KEY}`,
            },
          }),
        },
      ],
    ],
    [
      'rs-context',
      'a context_length_exceeded failure naming the key',
      [
        created,
        failed('context_length_exceeded', `Your input exceeds the context window (key ${OPENAI_KEY})`),
      ],
    ],
  ] as const) {
    test(`Responses, before any output: ${name} becomes an HTTP error with the key masked`, async () => {
      const { status, text, log } = await call('/v1/responses', responsesBody, [...events], session);
      assert.equal(status, 400, text);
      assert.ok(!text.includes(OPENAI_KEY), `the key is not in the answer: ${text}`);
      assert.match(text, /\[masked\]/);
      assert.ok(!log.includes(OPENAI_KEY), `the key is not in the chat log: ${log}`);
      assert.match(log, /\[masked\]/, 'the chat log keeps the error, masked');
    });
  }

  test('Responses, after output: the error event reaches the client and the chat log masked', async () => {
    const events = [
      created,
      outputAdded,
      textDelta,
      failed('server_error', `upstream failed for key ${OPENAI_KEY}`),
    ];
    const { status, text, log } = await call('/v1/responses', responsesBody, events, 'rs-mid');
    assert.equal(status, 200);
    assert.match(text, /"delta":"Hel"/, 'the output before the error came through');
    assert.ok(!text.includes(OPENAI_KEY), `the key is not in the stream: ${text}`);
    assert.match(text, /upstream failed for key \[masked\]/);
    assert.ok(!log.includes(OPENAI_KEY), `the key is not in the chat log: ${log}`);
  });

  test('Anthropic event: error inside a stream is masked', async () => {
    const events: SseEvent[] = [
      sse('message_start', {
        message: {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-test',
          content: [],
          stop_reason: null,
          usage: { input_tokens: 1, output_tokens: 0 },
        },
      }),
      sse('error', {
        error: { type: 'authentication_error', message: `invalid x-api-key ${ANTHROPIC_KEY}` },
      }),
    ];
    const body = { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    const { status, text, log } = await call('/v1/messages', body, events, 'an-err');
    assert.equal(status, 200);
    assert.ok(!text.includes(ANTHROPIC_KEY), `the key is not in the stream: ${text}`);
    assert.match(text, /invalid x-api-key \[masked\]/);
    assert.ok(!log.includes(ANTHROPIC_KEY), `the key is not in the chat log: ${log}`);
  });

  test('an OpenAI chat completions stream error chunk is masked', async () => {
    const chunk = {
      id: 'c',
      object: 'chat.completion.chunk',
      model: 'gpt-test',
      choices: [{ index: 0, delta: { role: 'assistant', content: 'Hi' }, finish_reason: null }],
    };
    const events: SseEvent[] = [
      { data: JSON.stringify(chunk) },
      {
        data: JSON.stringify({ error: { message: `Incorrect API key provided: ${OPENAI_KEY}`, code: 401 } }),
      },
    ];
    const body = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] };
    const { status, text, log } = await call('/v1/chat/completions', body, events, 'oa-err');
    assert.equal(status, 200);
    assert.ok(!text.includes(OPENAI_KEY), `the key is not in the stream: ${text}`);
    assert.match(text, /Incorrect API key provided: \[masked\]/);
    assert.ok(!log.includes(OPENAI_KEY), `the key is not in the chat log: ${log}`);
  });

  test('a 200 JSON answer carrying an error (as some compatible providers send) is masked', async () => {
    fake.reset();
    fake.script({ json: { error: { message: `Incorrect API key provided: ${OPENAI_KEY}`, code: 401 } } });
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await r.text();
    assert.equal(r.status, 200);
    assert.equal(
      text,
      JSON.stringify({ error: { message: 'Incorrect API key provided: [masked]', code: 401 } }),
    );
  });

  test('a JSON answer forwarded as it is (a stored response, embeddings) is masked too', async () => {
    fake.reset();
    fake.script({ json: { id: 'resp_echo', object: 'response', note: `the key was ${OPENAI_KEY}` } });
    const stored = await fetch(`${gw.url}/v1/responses/resp_echo`);
    assert.equal(stored.status, 200);
    assert.equal(
      await stored.text(),
      JSON.stringify({ id: 'resp_echo', object: 'response', note: 'the key was [masked]' }),
    );
    fake.script({ json: { object: 'list', data: [], note: OPENAI_KEY } });
    const embeddings = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'hi' }),
    });
    assert.equal(embeddings.status, 200);
    assert.equal(await embeddings.text(), JSON.stringify({ object: 'list', data: [], note: '[masked]' }));
    // A stored response's events, streamed through as they come.
    const data = JSON.stringify({ type: 'error', message: `bad key ${OPENAI_KEY}` });
    fake.script({ sse: [{ event: 'error', data }] });
    const streamed = await fetch(`${gw.url}/v1/responses/resp_echo?stream=true`);
    assert.equal(streamed.status, 200);
    assert.equal(await streamed.text(), `event: error\ndata: ${data.replace(OPENAI_KEY, '[masked]')}\n\n`);
  });

  test('no key in the gateway’s own log lines of all the calls above', () => {
    assert.ok(logs.text.length > 0, 'the calls were logged');
    assert.ok(!logs.text.includes(OPENAI_KEY) && !logs.text.includes(ANTHROPIC_KEY), 'no key in the logs');
  });
});
