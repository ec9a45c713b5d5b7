/**
 * The Responses API routes forwarded as they are (SPEC sections 2 and 9), through the official
 * `openai` SDK: `responses.retrieve` (also streamed), `delete`, `cancel`, `inputItems.list`,
 * `inputTokens.count`, and `embeddings.create`. Each test checks what the client got and what the
 * provider received (method, path, query, credential).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import {
  sharedRedisPrefix,
  startGateway,
  testStoreIsRedis,
  type TestGateway,
} from '../helpers/start-gateway.ts';
import { FakeProvider, type RecordedRequest } from '../fake-provider/fake-provider.ts';
import { dropPrefix } from '../helpers/redis-test.ts';
import { tempDir } from '../helpers/temp-dir.ts';

function client(gw: TestGateway, apiKey = 'sk-client-key'): OpenAI {
  return new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, maxRetries: 0 });
}

/** The requests the fake got other than model calls (POST /v1/responses). */
function lastRequest(gw: TestGateway): RecordedRequest {
  const r = gw.fake.requests.at(-1);
  assert.ok(r, 'the provider received a request');
  return r;
}

/** Forgets the requests a fake received (keeping the responses it stored). */
function forget(fake: FakeProvider): void {
  fake.requests.length = 0;
}

async function createStored(gw: TestGateway, openai: OpenAI, extra: Record<string, unknown> = {}) {
  const created = await openai.responses.create({ model: 'gpt-5', input: 'remember this', ...extra });
  assert.match(created.id, /^resp_/);
  return created;
}

describe('stored responses without teams: forwarded with the client’s credential', () => {
  let gw: TestGateway;
  let openai: OpenAI;
  before(async () => {
    gw = await startGateway();
    openai = client(gw);
  });
  after(() => gw.close());

  test('retrieve: the provider’s object comes back; only include[] and stream-related parameters go upstream', async () => {
    const created = await createStored(gw, openai);
    forget(gw.fake);
    const got = await openai.responses.retrieve(created.id, {
      include: ['reasoning.encrypted_content', 'message.output_text.logprobs'],
      ...({ extra_param: 'dropped' } as object),
    });
    assert.equal(got.id, created.id);
    assert.equal(got.output_text, created.output_text);
    const r = lastRequest(gw);
    assert.equal(r.method, 'GET');
    const url = new URL(r.path, 'http://x');
    assert.equal(url.pathname, `/v1/responses/${created.id}`);
    assert.deepEqual(url.searchParams.getAll('include[]'), [
      'reasoning.encrypted_content',
      'message.output_text.logprobs',
    ]);
    assert.equal(url.searchParams.get('extra_param'), null);
    assert.equal(r.headers.authorization, 'Bearer sk-client-key');
    assert.equal(r.headers['content-type'], undefined, 'a read carries no body type');
  });

  test('retrieve with stream=true: the events are piped through as the provider sent them', async () => {
    const created = await createStored(gw, openai);
    forget(gw.fake);
    const events = [
      {
        event: 'response.created',
        data: { type: 'response.created', sequence_number: 0, response: { id: created.id } },
      },
      {
        event: 'response.output_text.delta',
        data: {
          type: 'response.output_text.delta',
          sequence_number: 1,
          delta: 'Hi',
          item_id: 'msg_1',
          output_index: 0,
          content_index: 0,
        },
      },
      {
        event: 'response.completed',
        data: {
          type: 'response.completed',
          sequence_number: 2,
          response: { id: created.id, status: 'completed' },
        },
      },
    ];
    gw.fake.script({ sse: events.map((e) => ({ event: e.event, data: JSON.stringify(e.data) })) });
    const stream = await openai.responses.retrieve(created.id, { stream: true, starting_after: 0 });
    const seen: string[] = [];
    for await (const e of stream) seen.push(e.type);
    assert.deepEqual(seen, ['response.created', 'response.output_text.delta', 'response.completed']);
    const url = new URL(lastRequest(gw).path, 'http://x');
    assert.equal(url.searchParams.get('stream'), 'true');
    assert.equal(url.searchParams.get('starting_after'), '0');
  });

  test('inputItems.list: after, before, limit, order and include forwarded; nothing else', async () => {
    const created = await createStored(gw, openai);
    forget(gw.fake);
    const page = await openai.responses.inputItems.list(created.id, {
      limit: 5,
      order: 'asc',
      after: 'msg_aa',
      include: ['message.input_image.image_url'],
    });
    assert.ok(page.data.length >= 1, 'page.data.length >= 1');
    const r = lastRequest(gw);
    const url = new URL(r.path, 'http://x');
    assert.equal(url.pathname, `/v1/responses/${created.id}/input_items`);
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      limit: '5',
      order: 'asc',
      after: 'msg_aa',
      'include[]': 'message.input_image.image_url',
    });
    // Anything else the client adds stays at the gateway.
    const raw = await fetch(`${gw.url}/v1/responses/${created.id}/input_items?limit=2&secret=x&order=desc`, {
      headers: { authorization: 'Bearer sk-client-key' },
    });
    assert.equal(raw.status, 200);
    assert.deepEqual(Object.fromEntries(new URL(lastRequest(gw).path, 'http://x').searchParams), {
      limit: '2',
      order: 'desc',
    });
    const bad = await fetch(`${gw.url}/v1/responses/${created.id}/input_items?order=sideways`, {
      headers: { authorization: 'Bearer sk-client-key' },
    });
    assert.equal(bad.status, 400);
    const body = (await bad.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, 'order');
    assert.match(body.error.message, /order must be asc or desc/);
  });

  test('cancel: forwarded; the provider’s refusal (not a background response) comes back as sent', async () => {
    const created = await createStored(gw, openai);
    forget(gw.fake);
    await assert.rejects(openai.responses.cancel(created.id), (e: unknown) => {
      assert.ok(e instanceof OpenAI.BadRequestError, 'e instanceof OpenAI.BadRequestError');
      assert.match(e.message, /background=true/);
      return true;
    });
    const r = lastRequest(gw);
    assert.equal(r.method, 'POST');
    assert.equal(r.path, `/v1/responses/${created.id}/cancel`);
    const background = await createStored(gw, openai, { background: true });
    const cancelled = await openai.responses.cancel(background.id);
    assert.equal(cancelled.status, 'cancelled');
  });

  test('delete: forwarded; the provider then answers 404 in its own words', async () => {
    const created = await createStored(gw, openai);
    forget(gw.fake);
    await openai.responses.delete(created.id);
    assert.equal(lastRequest(gw).method, 'DELETE');
    assert.equal(lastRequest(gw).path, `/v1/responses/${created.id}`);
    await assert.rejects(openai.responses.retrieve(created.id), (e: unknown) => {
      assert.ok(e instanceof OpenAI.NotFoundError, 'e instanceof OpenAI.NotFoundError');
      assert.match(e.message, new RegExp(`Response with id '${created.id}' not found`));
      return true;
    });
  });

  test('an id the gateway never saw goes to the first OpenAI-format provider; a malformed id is a 400', async () => {
    forget(gw.fake);
    await assert.rejects(openai.responses.retrieve('resp_never_seen'), OpenAI.NotFoundError);
    assert.equal(lastRequest(gw).path, '/v1/responses/resp_never_seen');
    forget(gw.fake);
    const res = await fetch(`${gw.url}/v1/responses/a%2F..%2Fb`, {
      headers: { authorization: 'Bearer sk-client-key' },
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { param: string } };
    assert.equal(body.error.param, 'id');
    assert.equal(gw.fake.requests.length, 0, 'nothing reached the provider');
  });

  test('inputTokens.count: to the provider serving the model, body as sent', async () => {
    forget(gw.fake);
    const counted = await openai.responses.inputTokens.count({ model: 'gpt-5', input: 'count these words' });
    assert.equal(counted.object, 'response.input_tokens');
    assert.ok(counted.input_tokens > 0, 'counted.input_tokens > 0');
    const r = lastRequest(gw);
    assert.equal(r.path, '/v1/responses/input_tokens');
    assert.deepEqual(r.json, { model: 'gpt-5', input: 'count these words' });
  });

  test('embeddings.create: forwarded as sent, the provider’s vectors back (the SDK’s base64 decoded)', async () => {
    forget(gw.fake);
    const got = await openai.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    assert.equal(got.data.length, 2);
    assert.equal(got.data[0]!.embedding.length, 1536);
    const r = lastRequest(gw);
    assert.equal(r.method, 'POST');
    assert.equal(r.path, '/v1/embeddings');
    assert.equal(r.json?.model, 'text-embedding-3-small');
    assert.deepEqual(r.json?.input, ['a', 'b']);
    assert.equal(r.json?.encoding_format, 'base64');
    assert.equal(r.headers.authorization, 'Bearer sk-client-key');
    // No chat log: no session header, no chat.
    const raw = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-client-key' },
      body: JSON.stringify({ model: 'text-embedding-3-small', input: 'x' }),
    });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('x-session-id'), null);
  });

  test('embeddings: a body without a model is a 400 naming it; nothing is sent', async () => {
    forget(gw.fake);
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'x' }),
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, 'model');
    assert.equal(body.error.message, 'model must be a string');
    assert.equal(gw.fake.requests.length, 0);
  });
});

describe('with provider keys and two OpenAI-format providers', () => {
  let gw: TestGateway;
  let second: FakeProvider;
  let openai: OpenAI;
  before(async () => {
    second = await new FakeProvider().start();
    const first = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: first,
      config: {
        providers: [
          {
            name: 'first',
            format: 'openai',
            baseUrl: `${first.url}/v1`,
            apiKey: 'sk-first',
            models: ['gpt-a*'],
          },
          {
            name: 'second',
            format: 'openai',
            baseUrl: `${second.url}/v1`,
            apiKey: 'sk-second',
            models: ['gpt-b*'],
          },
        ],
      },
    });
    openai = client(gw);
  });
  after(async () => {
    await gw.close();
    await gw.fake.close();
    await second.close();
  });

  test('a stored response is fetched from the provider that served it, with that provider’s key', async () => {
    const created = await createStored(gw, openai, { model: 'gpt-b-1' });
    assert.equal(second.requestsTo('/v1/responses').length, 1);
    forget(second);
    forget(gw.fake);
    const got = await openai.responses.retrieve(created.id);
    assert.equal(got.id, created.id);
    assert.equal(gw.fake.requests.length, 0, 'the first provider was not asked');
    const r = second.requests.at(-1)!;
    assert.equal(r.path, `/v1/responses/${created.id}`);
    assert.equal(r.headers.authorization, 'Bearer sk-second', 'the gateway’s key, never the client’s');
    const items = await openai.responses.inputItems.list(created.id);
    assert.ok(items.data.length >= 1, 'items.data.length >= 1');
    assert.equal(second.requests.at(-1)!.path, `/v1/responses/${created.id}/input_items`);
  });

  test('an id the gateway never saw goes to the first OpenAI-format provider', async () => {
    forget(gw.fake);
    forget(second);
    await assert.rejects(openai.responses.retrieve('resp_unknown_here'), OpenAI.NotFoundError);
    assert.equal(gw.fake.requests.at(-1)?.path, '/v1/responses/resp_unknown_here');
    assert.equal(gw.fake.requests.at(-1)?.headers.authorization, 'Bearer sk-first');
    assert.equal(second.requests.length, 0);
  });

  test('embeddings and input_tokens go to the provider serving the model; unknown model is a 404', async () => {
    forget(second);
    await openai.embeddings.create({ model: 'gpt-b-embed', input: 'x' });
    await openai.responses.inputTokens.count({ model: 'gpt-b-1', input: 'y' });
    assert.deepEqual(
      second.requests.map((r) => [r.path, r.headers.authorization]),
      [
        ['/v1/embeddings', 'Bearer sk-second'],
        ['/v1/responses/input_tokens', 'Bearer sk-second'],
      ],
    );
    await assert.rejects(openai.embeddings.create({ model: 'other-model', input: 'x' }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.NotFoundError, 'e instanceof OpenAI.NotFoundError');
      assert.match(e.message, /no configured openai provider serves model "other-model"/);
      return true;
    });
  });

  test('a provider that cannot be reached is a 502 in OpenAI’s shape; metrics count the forwarded calls', async () => {
    await second.close();
    await assert.rejects(openai.embeddings.create({ model: 'gpt-b-embed', input: 'x' }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.APIError, 'e instanceof OpenAI.APIError');
      assert.equal(e.status, 502);
      assert.match(e.message, /provider "second" is unreachable/);
      return true;
    });
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.match(metrics, /oda_requests_total\{route="\/v1\/embeddings",status="200"\} 1/);
    assert.match(metrics, /oda_requests_total\{route="\/v1\/embeddings",status="502"\} 1/);
    assert.match(metrics, /oda_upstream_latency_seconds_count\{provider="second",outcome="answered"\} [1-9]/);
  });
});

describe('provider names are compared without case', () => {
  test('a stored response still goes to the provider that served it when the config re-cases its name', async () => {
    const first = await new FakeProvider().start();
    const second = await new FakeProvider().start();
    const dataDir = tempDir('oda-recased-');
    const providers = (names: [string, string]) => [
      { name: names[0], format: 'openai' as const, baseUrl: `${first.url}/v1`, models: ['gpt-a*'] },
      { name: names[1], format: 'openai' as const, baseUrl: `${second.url}/v1`, models: ['gpt-b*'] },
    ];
    let gw = await startGateway({
      fakeProvider: first,
      dataDir,
      config: { providers: providers(['first', 'second']) },
    });
    try {
      const created = await createStored(gw, client(gw), { model: 'gpt-b-1' });
      assert.equal(second.requestsTo('/v1/responses').length, 1);
      await gw.close();
      // The same providers, their names written in another case: the record of who served the
      // response still names one of them.
      gw = await startGateway({
        fakeProvider: first,
        dataDir,
        config: { providers: providers(['First', 'Second']) },
      });
      forget(first);
      forget(second);
      const got = await client(gw).responses.retrieve(created.id);
      assert.equal(got.id, created.id);
      assert.equal(second.requests.at(-1)?.path, `/v1/responses/${created.id}`);
      assert.equal(first.requests.length, 0, 'not the first OpenAI-format provider');
    } finally {
      await gw.close();
      await first.close();
      await second.close();
      if (testStoreIsRedis) await dropPrefix(sharedRedisPrefix(dataDir));
    }
  });
});

describe('a streamed retrieve is piped as it arrives, never buffered', () => {
  let provider: Server;
  let release: () => void = () => {};
  let gw: TestGateway;
  before(async () => {
    // A provider that sends the first event, then waits until the client has read it.
    provider = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const event = (type: string, n: number) =>
        `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, response: { id: 'resp_live' } })}\n\n`;
      res.write(event('response.created', 0));
      release = () => {
        res.write(event('response.in_progress', 1));
        res.end(event('response.completed', 2));
      };
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const port = (provider.address() as AddressInfo).port;
    gw = await startGateway({
      config: { providers: [{ name: 'live', format: 'openai', baseUrl: `http://127.0.0.1:${port}/v1` }] },
    });
  });
  after(async () => {
    await gw.close();
    provider.closeAllConnections();
    await new Promise<void>((resolve) => provider.close(() => resolve()));
  });

  test(
    'the client reads the first event before the provider has sent the rest',
    { timeout: 10_000 },
    async () => {
      const stream = await client(gw).responses.retrieve('resp_live', { stream: true });
      const seen: string[] = [];
      for await (const e of stream) {
        seen.push(e.type);
        if (seen.length === 1) release();
      }
      assert.deepEqual(seen, ['response.created', 'response.in_progress', 'response.completed']);
    },
  );
});
