import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { bodies } from '../fake-provider/fake-bodies.ts';

describe('OpenAI Chat Completions through the gateway (official SDK)', () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway();
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client-key', maxRetries: 0 });
  });
  after(() => gw.close());
  beforeEach(() => gw.fake.reset());

  test('non-streamed answer reaches the client; the provider gets the body as sent', async () => {
    const body = {
      model: 'gpt-test',
      messages: [{ role: 'user' as const, content: 'Hello?' }],
      temperature: 0.25,
      some_unknown_field: { nested: [1, 'two'] },
    };
    const { data, response } = await client.chat.completions
      .create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    assert.equal(data.choices[0]!.message.content, 'Hello from the fake provider.');
    assert.match(response.headers.get('x-session-id') ?? '', /^[A-Za-z0-9._:-]{1,128}$/);
    const got = gw.fake.requestsTo('/v1/chat/completions');
    assert.equal(got.length, 1);
    assert.deepEqual(got[0]!.json, body);
    // Pass-through mode: no provider key configured, the client's credential is forwarded.
    assert.equal(got[0]!.headers.authorization, 'Bearer sk-client-key');
  });

  test('a request nothing changes is forwarded byte for byte', async () => {
    const raw = '{"model":"gpt-test",  "messages":[{"role":"user","content":"exact bytes \\u00e9"}],"n":1.0}';
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    });
    assert.equal(res.status, 200);
    assert.equal(gw.fake.requestsTo('/v1/chat/completions')[0]!.raw.toString('utf8'), raw);
  });

  test('streamed answer arrives chunk by chunk with the usage-only chunk', async () => {
    const stream = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usageChunks = 0;
    for await (const chunk of stream) {
      if (chunk.choices.length === 0 && chunk.usage) usageChunks++;
      const c = chunk.choices[0]?.delta?.content;
      if (c) pieces.push(c);
    }
    assert.equal(pieces.join(''), 'Hello from the fake provider.');
    assert.equal(usageChunks, 1);
  });

  test('the SSE bytes pass unchanged, [DONE] included', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const text = await res.text();
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    assert.equal(text.split('data: ').length - 1, 8);
  });

  test('transient failures are retried with backoff, honouring retry-after-ms', async () => {
    gw.fake.script(
      { status: 500, json: bodies.openaiServerError(), headers: { 'retry-after-ms': '3' } },
      {
        status: 429,
        json: {
          error: {
            message: 'Rate limit reached',
            type: 'requests',
            param: null,
            code: 'rate_limit_exceeded',
          },
        },
      },
    );
    gw.sleeps.length = 0;
    const answer = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'retry' }],
    });
    assert.equal(answer.choices[0]!.message.content, 'Hello from the fake provider.');
    assert.equal(gw.fake.requestsTo('/v1/chat/completions').length, 3);
    assert.deepEqual(gw.sleeps, [3, 2]);
  });

  test('when retries run out the last refusal comes back with its retry headers, not told to stop', async () => {
    for (let i = 0; i < 2; i++) gw.fake.script({ status: 503, json: bodies.openaiServerError() });
    gw.fake.script({
      status: 503,
      json: bodies.openaiServerError(),
      headers: { 'retry-after-ms': '1500', 'retry-after': '2' },
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('x-should-retry'), null);
    assert.equal(res.headers.get('retry-after-ms'), '1500');
    assert.equal(res.headers.get('retry-after'), '2');
    assert.equal(res.headers.get('x-oda-attempts'), '3');
    assert.deepEqual(await res.json(), bodies.openaiServerError());
    assert.equal(gw.fake.requestsTo('/v1/chat/completions').length, 3);
  });

  test('x-should-retry: false from the provider is obeyed', async () => {
    gw.fake.script({ status: 500, json: bodies.openaiServerError(), headers: { 'x-should-retry': 'false' } });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(res.status, 500);
    assert.equal(gw.fake.requestsTo('/v1/chat/completions').length, 1);
  });

  test('a connection reset is retried', async () => {
    gw.fake.script({ reset: true });
    const answer = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'reset' }],
    });
    assert.equal(answer.choices[0]!.message.content, 'Hello from the fake provider.');
    assert.equal(gw.fake.requestsTo('/v1/chat/completions').length, 2);
  });

  test('gateway errors use the OpenAI error shape', async () => {
    const bad = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "gpt-test", "messages": [',
    });
    assert.equal(bad.status, 400);
    const badBody = (await bad.json()) as { error: { message: string; type: string; code: string } };
    assert.equal(badBody.error.type, 'invalid_request_error');
    assert.equal(badBody.error.code, 'ODA_ERR_BAD_JSON');
    assert.match(badBody.error.message, /not valid JSON/);

    const wrongType = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 42, messages: [] }),
    });
    assert.equal(wrongType.status, 400);
    const wt = (await wrongType.json()) as { error: { message: string; param: string } };
    assert.equal(wt.error.param, 'model');
    assert.match(wt.error.message, /model must be a string/);

    const unknown = await fetch(`${gw.url}/v1/nothing-here`);
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: { code: string } }).error.code, 'ODA_ERR_NOT_FOUND');
    assert.equal(gw.fake.requests.length, 0);
  });

  test('a model no provider serves is a 404 in the endpoint format', async () => {
    const local = await startGateway({
      fakeProvider: gw.fake,
      config: {
        providers: [
          { name: 'only-claude', format: 'openai', baseUrl: `${gw.fake.url}/v1`, models: ['claude-*'] },
        ],
      },
    });
    try {
      const res = await fetch(`${local.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(res.status, 404);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'ODA_ERR_NO_PROVIDER');
      assert.match(body.error.message, /gpt-test/);
    } finally {
      await local.close();
    }
  });

  test('tool-call deltas without index are one call in the log; the next turn continues the chat', async () => {
    // A compatible server that omits `index`: the id and name come first, the arguments in fragments.
    const chunk = (delta: object, finish: string | null = null) => ({
      data: JSON.stringify({
        id: 'chatcmpl-noindex',
        object: 'chat.completion.chunk',
        model: 'gpt-test',
        choices: [{ index: 0, delta, finish_reason: finish }],
      }),
    });
    const args = (text: string) => ({ tool_calls: [{ function: { arguments: text } }] });
    gw.fake.script({
      sse: [
        chunk({
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }],
        }),
        chunk(args('{"city": ')),
        chunk(args('"Paris"}')),
        chunk({}, 'tool_calls'),
        { data: '[DONE]' },
      ],
    });
    const chat = 'tool-calls-without-index';
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
    ];
    const user: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'Weather in Paris?' };
    const headers = { 'x-session-id': chat };
    const stream = await client.chat.completions.create(
      { model: 'gpt-test', stream: true, tools, messages: [user] },
      { headers },
    );
    let argText = '';
    for await (const c of stream) argText += c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
    assert.equal(argText, '{"city": "Paris"}');

    const events = (await (await fetch(`${gw.url}/v1/sessions/${chat}/events`)).json()) as {
      events: Array<{ type: string; role?: string; content?: unknown[] }>;
    };
    const answer = events.events.find((e) => e.type === 'message' && e.role === 'model');
    assert.deepEqual(answer?.content, [
      { kind: 'tool-call', id: 'call_1', name: 'get_weather', args: '{"city": "Paris"}' },
    ]);

    const { response } = await client.chat.completions
      .create(
        {
          model: 'gpt-test',
          tools,
          messages: [
            user,
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: argText } },
              ],
            },
            { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
          ],
        },
        { headers },
      )
      .withResponse();
    assert.equal(response.headers.get('x-session-id'), chat, 'the same chat, not a branch');
  });
});
