import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { bodies, openaiStream } from '../fake-provider/fake-bodies.ts';

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

describe('provider keys, limits and timeouts', () => {
  test('a configured provider key replaces the client credential', async () => {
    const gw = await startGateway();
    const keyed = await startGateway({
      fakeProvider: gw.fake,
      config: {
        providers: [
          { name: 'keyed', format: 'openai', baseUrl: `${gw.fake.url}/v1`, apiKey: 'sk-provider-secret' },
        ],
      },
    });
    try {
      const client = new OpenAI({ baseURL: `${keyed.url}/v1`, apiKey: 'sk-client-key', maxRetries: 0 });
      await client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'k' }] });
      const got = gw.fake.requestsTo('/v1/chat/completions');
      assert.equal(got[0]!.headers.authorization, 'Bearer sk-provider-secret');
    } finally {
      await keyed.close();
      await gw.close();
    }
  });

  test('a body over the limit is a 413 in the endpoint format', async () => {
    const gw = await startGateway({ config: { server: { bodyLimit: '1kb' } } });
    try {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x'.repeat(5000) }] }),
      });
      assert.equal(res.status, 413);
      const body = (await res.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'ODA_ERR_BODY_TOO_LARGE');
      assert.equal(gw.fake.requests.length, 0);
    } finally {
      await gw.close();
    }
  });

  test('a 10 MB request with images goes through', async () => {
    const gw = await startGateway();
    try {
      const img = Buffer.alloc(2 * 1024 * 1024, 7).toString('base64');
      const body = {
        model: 'gpt-test',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              ...Array.from({ length: 4 }, () => ({
                type: 'image_url',
                image_url: { url: `data:image/png;base64,${img}` },
              })),
            ],
          },
        ],
      };
      const raw = JSON.stringify(body);
      assert.ok(raw.length > 10 * 1024 * 1024);
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: raw,
      });
      assert.equal(res.status, 200);
      assert.equal(gw.fake.requestsTo('/v1/chat/completions')[0]!.raw.length, Buffer.byteLength(raw));
    } finally {
      await gw.close();
    }
  });

  test('an upstream that never answers is a 504; an unreachable one a 502', async () => {
    const gw = await startGateway({ config: { timeouts: { firstByteMs: 200 }, retries: { maxRetries: 0 } } });
    try {
      gw.fake.script({ hang: true });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(res.status, 504);
      assert.equal(
        ((await res.json()) as { error: { code: string } }).error.code,
        'ODA_ERR_UPSTREAM_TIMEOUT',
      );
    } finally {
      await gw.close();
    }
    const dead = await startGateway({
      config: {
        providers: [{ name: 'dead', format: 'openai', baseUrl: 'http://127.0.0.1:9/v1' }],
        retries: { maxRetries: 1 },
      },
    });
    try {
      const res = await fetch(`${dead.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'dead-provider' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(res.status, 502);
      const events = (await (await fetch(`${dead.url}/v1/sessions/dead-provider/events`)).json()) as {
        events: Array<{ type: string; status?: number; ok?: boolean; attempts?: number }>;
      };
      const logged = events.events.find((e) => e.type === 'response');
      assert.deepEqual(
        [logged?.status, logged?.ok, logged?.attempts],
        [502, false, 2],
        'the status the client got',
      );
      // Connection lost is transient: the client's own backoff decides, the gateway does not say stop.
      assert.equal(res.headers.get('x-should-retry'), null);
      assert.equal(res.headers.get('x-oda-attempts'), '2');
      assert.equal(
        ((await res.json()) as { error: { code: string } }).error.code,
        'ODA_ERR_UPSTREAM_UNREACHABLE',
      );
      assert.equal(dead.sleeps.length, 1);
    } finally {
      await dead.close();
    }
  });

  test('a client that goes away mid-stream aborts the upstream request', async () => {
    const gw = await startGateway({
      fake: { chunkDelayMs: 30, streamPieces: Array.from({ length: 100 }, (_, i) => `p${i}`) },
    });
    try {
      const ac = new AbortController();
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x' }], stream: true }),
        signal: ac.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      ac.abort();
      for (let i = 0; i < 100 && gw.fake.abortedStreams === 0; i++)
        await new Promise((r) => setTimeout(r, 20));
      assert.equal(gw.fake.abortedStreams, 1);
    } finally {
      await gw.close();
    }
  });
});

describe('metrics and stream idle timeout', () => {
  test('a JSON answer that breaks off is a 502 (not retried by the gateway), and the log says so', async () => {
    const gw = await startGateway({ config: { retries: { maxRetries: 0 } } });
    try {
      const whole = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] });
      gw.fake.script({ truncated: whole, sent: 10 });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'cut-json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'cut' }] }),
      });
      assert.equal(res.status, 502);
      assert.equal(res.headers.get('x-should-retry'), null);
      assert.equal(res.headers.get('x-oda-attempts'), '1');
      const error = ((await res.json()) as { error: { code: string; message: string } }).error;
      assert.equal(error.code, 'ODA_ERR_UPSTREAM_UNREACHABLE');
      const events = (await (await fetch(`${gw.url}/v1/sessions/cut-json/events`)).json()) as {
        events: Array<{ type: string; status?: number; ok?: boolean; error?: string }>;
      };
      const response = events.events.find((e) => e.type === 'response');
      assert.equal(response?.status, 502, 'the status the client got');
      assert.equal(response?.ok, false);
      assert.equal(response?.error, `answer ended before completion: ${error.message}`);
    } finally {
      await gw.close();
    }
  });

  test('/metrics counts requests, retries by reason and upstream latency', async () => {
    const gw = await startGateway();
    try {
      gw.fake.script({ status: 529, json: bodies.anthropicOverloaded() });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'metrics' }] }),
      });
      assert.equal(res.status, 200);
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      assert.match(text, /oda_requests_total\{route="\/v1\/chat\/completions",status="200"\} 1/);
      assert.match(text, /oda_upstream_retries_total\{reason="status:529"\} 1/);
      // Both attempts got their response headers: the refusal and the answer.
      assert.match(
        text,
        /oda_upstream_latency_seconds_count\{provider="fake-openai",outcome="answered"\} 2\n/,
      );
      assert.doesNotMatch(text, /outcome="failed"/);
    } finally {
      await gw.close();
    }
  });

  test('/metrics times failed attempts too: a provider slow to fail is seen, apart from the answers', async () => {
    const gw = await startGateway({
      config: { timeouts: { firstByteMs: 300 }, retries: { maxRetries: 0 } },
    });
    try {
      gw.fake.script({ hang: true });
      const post = () =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'slow' }] }),
        });
      assert.equal((await post()).status, 504);
      assert.equal((await post()).status, 200);
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const series = (name: string, outcome: string) =>
        Number(
          new RegExp(`^${name}\\{provider="fake-openai",outcome="${outcome}"\\} (\\S+)$`, 'm').exec(
            text,
          )?.[1],
        );
      assert.equal(series('oda_upstream_latency_seconds_count', 'failed'), 1, text);
      assert.ok(series('oda_upstream_latency_seconds_sum', 'failed') >= 0.3, 'timed to the failure');
      assert.match(
        text,
        /^oda_upstream_latency_seconds_bucket\{le="0.1",provider="fake-openai",outcome="failed"\} 0$/m,
      );
      assert.equal(series('oda_upstream_latency_seconds_count', 'answered'), 1);
      assert.match(text, /# HELP oda_upstream_latency_seconds .*failed \(no answer/);
    } finally {
      await gw.close();
    }
  });

  test('a stream that goes silent longer than timeouts.idleMs is cut, and the log says it was incomplete', async () => {
    const gw = await startGateway({ config: { timeouts: { idleMs: 150 } } });
    try {
      gw.fake.script({ sse: openaiStream('gpt-test', ['a', 'b', 'c']), chunkDelayMs: 600 });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'idle-cut' },
        body: JSON.stringify({
          model: 'gpt-test',
          messages: [{ role: 'user', content: 'slow' }],
          stream: true,
        }),
      });
      assert.equal(res.status, 200);
      await assert.rejects(res.text());
      const events = (await (await fetch(`${gw.url}/v1/sessions/idle-cut/events`)).json()) as {
        events: Array<{ type: string; ok?: boolean; error?: string }>;
      };
      const response = events.events.find((e) => e.type === 'response');
      assert.equal(response?.ok, false);
      // Why it ended is in the log: the provider went silent past timeouts.idleMs.
      assert.equal(
        response?.error,
        'stream ended before completion: provider "fake-openai" went silent in the middle of its answer (HTTP 200): provider sent nothing more in time (timeouts.idleMs between two chunks of its answer)',
      );
    } finally {
      await gw.close();
    }
  });
});
