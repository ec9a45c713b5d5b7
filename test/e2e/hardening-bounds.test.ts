/**
 * Fair share and bounds (SPEC section 14), each as the attack that found it: one team holding
 * every slot, bodies of 300,000 messages or thousands of "images", a body that never finishes
 * arriving, a wrong key followed by a large body, too many sockets, and a refusal that names no
 * count making the image repair go one image per round. Every test checks what the client got and
 * what the provider received.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { FakeProvider, countImages } from '../fake-provider/fake-provider.ts';
import { rawRequest, requestHead, sendPartialRequest, statusOf } from '../helpers/raw-http.ts';
import { newKey } from '../../server/cli-keys.ts';
import { createGatewayServer } from '../../server/listen.ts';
import { makePng } from '../../chat-log/test-images.ts';
import { loadOpenApi, validateResponse } from '../helpers/openapi-validator.ts';

const doc = loadOpenApi();

/** The answer is documented in openapi.yaml for its route and status, body schema included. */
function assertDocumented(method: string, path: string, r: { status: number; json: unknown }): void {
  assert.deepEqual(
    validateResponse(doc, method, path, r.status, r.json),
    [],
    `${method} ${path} ${r.status}`,
  );
}

const teamA = newKey();
const teamB = newKey();

const messagesBody = (n = 1) => ({
  model: 'claude-test',
  max_tokens: 10,
  messages: Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` })),
});
const chatBody = (n = 1) => ({
  model: 'gpt-test',
  messages: Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` })),
});

/** Waits (polling, no deadline asserted) until `check` holds. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`gave up waiting: ${what}`);
}

describe('fair share: per-team and gateway-wide caps on calls in flight', () => {
  let fake: FakeProvider;
  let gw: TestGateway;
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        server: { maxConcurrent: 3 },
        teams: [
          { name: 'a', keys: [teamA.hash], maxConcurrent: 2 },
          { name: 'b', keys: [teamB.hash], maxConcurrent: 2 },
        ],
      },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test('a team over its share gets a 429 in the endpoint’s format; other teams still get through', async () => {
    fake.reset();
    fake.script({ hang: true }, { hang: true }, { hang: true });
    const held: AbortController[] = [];
    const hold = (key: string) => {
      const abort = new AbortController();
      held.push(abort);
      void fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify(messagesBody()),
        signal: abort.signal,
      }).catch(() => undefined);
    };
    hold(teamA.key);
    hold(teamA.key);
    await until(() => fake.requests.length === 2, 'two calls of team a at the provider');

    // Team a's third call: Anthropic's SDK sees a RateLimitError with retry-after.
    const client = new Anthropic({ baseURL: gw.url, apiKey: teamA.key, maxRetries: 0 });
    const err = await client.messages
      .create(messagesBody() as Anthropic.MessageCreateParamsNonStreaming)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err instanceof Anthropic.RateLimitError, String(err));
    assert.equal(err.headers?.get('retry-after'), '1');
    assert.equal((err.error as { error: { type: string } }).error.type, 'rate_limit_error');
    assert.match(
      String((err.error as { error: { message: string } }).error.message),
      /teams\[\]\.maxConcurrent/,
    );
    assert.equal(fake.requests.length, 2, 'the provider never saw it');

    // Team b is not held up by team a.
    hold(teamB.key);
    await until(() => fake.requests.length === 3, 'team b’s call at the provider');

    // Now the gateway is full (3): team b's second call is refused gateway-wide, in OpenAI's shape.
    const full = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${teamB.key}` },
      body: JSON.stringify(chatBody()),
    });
    assert.equal(full.status, 429);
    assert.equal((full.json?.error as { type: string }).type, 'rate_limit_error');
    assert.equal((full.json?.error as { code: string }).code, 'ODA_ERR_TOO_MANY_CALLS');
    assert.match((full.json?.error as { message: string }).message, /server\.maxConcurrent/);
    assertDocumented('POST', '/v1/chat/completions', full);
    assert.equal(fake.requests.length, 3);

    // Reads are not calls: a held team still lists its chats.
    const list = await rawRequest(gw.url, {
      method: 'GET',
      path: '/v1/sessions',
      headers: { authorization: `Bearer ${teamA.key}` },
    });
    assert.equal(list.status, 200, list.text);

    // A finished (here: abandoned) call frees its slot.
    held[0]!.abort();
    await until(async () => {
      const r = await rawRequest(gw.url, {
        path: '/v1/messages',
        headers: { 'content-type': 'application/json', 'x-api-key': teamA.key },
        body: JSON.stringify(messagesBody()),
      });
      return r.status === 200;
    }, 'team a gets a slot back');
    for (const h of held) h.abort();
  });

  test('a read that holds an upstream connection or a body takes a slot: stored responses, a GET with a body', async () => {
    fake.reset();
    const asA = { authorization: `Bearer ${teamA.key}` };
    const created = await rawRequest(gw.url, {
      path: '/v1/responses',
      headers: { ...asA, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', input: 'hello' }),
    });
    assert.equal(created.status, 200, created.text);
    const id = String(created.json?.id);
    const reads = () => fake.requests.filter((r) => r.method === 'GET').length;

    // Team a holds two streams of its own stored response at a provider that does not answer.
    fake.script({ hang: true }, { hang: true });
    const held = [new AbortController(), new AbortController()];
    for (const abort of held) {
      void fetch(`${gw.url}/v1/responses/${id}?stream=true`, { headers: asA, signal: abort.signal }).catch(
        () => undefined,
      );
    }
    await until(() => reads() === 2, 'two reads of team a at the provider');

    // Each further forwarded read of team a is refused before it reaches the provider.
    for (const path of [`/v1/responses/${id}`, `/v1/responses/${id}/input_items`, `/V1/Responses/${id}/`]) {
      const r = await rawRequest(gw.url, { method: 'GET', path, headers: asA });
      assert.equal(r.status, 429, `${path}: ${r.text}`);
      assert.equal((r.json?.error as { code: string }).code, 'ODA_ERR_TOO_MANY_CALLS');
      assert.match((r.json?.error as { message: string }).message, /teams\[\]\.maxConcurrent/);
    }
    // A GET that carries a body would be held in memory like a call's: it needs a slot too.
    const withBody = await rawRequest(gw.url, {
      method: 'GET',
      path: '/v1/sessions',
      headers: { ...asA, 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(10_000) }),
    });
    assert.equal(withBody.status, 429, withBody.text);
    assert.equal(reads(), 2, 'the provider saw none of the refused reads');

    // A read of the gateway's own data is no call; team b is not held up.
    const list = await rawRequest(gw.url, { method: 'GET', path: '/v1/sessions', headers: asA });
    assert.equal(list.status, 200, list.text);
    const b = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${teamB.key}` },
      body: JSON.stringify(chatBody()),
    });
    assert.equal(b.status, 200, b.text);

    // Once the held reads are gone, team a reads its response again.
    for (const h of held) h.abort();
    await until(async () => {
      const r = await rawRequest(gw.url, { method: 'GET', path: `/v1/responses/${id}`, headers: asA });
      return r.status === 200;
    }, 'team a gets its slots back');
  });
});

describe('bounded work per request: messages and images', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { server: { maxMessages: 10, maxImagesPerRequest: 3 } } });
  });
  after(async () => gw.close());

  test('more than server.maxMessages messages is a 413 in each format; the limit itself passes', async () => {
    gw.fake.reset();
    const over = await rawRequest(gw.url, {
      path: '/v1/messages',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(messagesBody(11)),
    });
    assert.equal(over.status, 413, over.text);
    assert.equal((over.json?.error as { type: string }).type, 'request_too_large');
    assert.match(
      (over.json?.error as { message: string }).message,
      /more than 10 messages \(server\.maxMessages\)/,
    );
    assertDocumented('POST', '/v1/messages', over);
    const overOpenai = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(chatBody(11)),
    });
    assert.equal(overOpenai.status, 413);
    assert.equal((overOpenai.json?.error as { param: string }).param, 'messages');
    assert.equal(gw.fake.requests.length, 0, 'the provider received nothing');

    const at = await rawRequest(gw.url, {
      path: '/v1/messages',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(messagesBody(9)),
    });
    assert.equal(at.status, 200, at.text);
    assert.equal(gw.fake.requests.length, 1);
  });

  test('more than server.maxImagesPerRequest images is a 413, wherever they sit', async () => {
    gw.fake.reset();
    const png = makePng(1, 1).toString('base64');
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } };
    const body = {
      model: 'claude-test',
      max_tokens: 10,
      messages: [
        { role: 'user', content: [image, image] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'shot', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: [image, image] }] },
      ],
    };
    const r = await rawRequest(gw.url, {
      path: '/v1/messages',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    assert.equal(r.status, 413, r.text);
    assert.match(
      (r.json?.error as { message: string }).message,
      /more than 3 images \(server\.maxImagesPerRequest\)/,
    );
    assert.equal(gw.fake.requests.length, 0);
    const openai = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-test',
        messages: [
          {
            role: 'user',
            content: Array.from({ length: 4 }, () => ({
              type: 'image_url',
              image_url: { url: `data:image/png;base64,${png}` },
            })),
          },
        ],
      }),
    });
    assert.equal(openai.status, 413);
    assert.equal(gw.fake.requests.length, 0);
  });
});

describe('bounded connections: slow bodies, early refusals', () => {
  const team = newKey();
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [{ name: 'solo', keys: [team.hash] }],
        server: { bodyLimit: '1mb' },
        timeouts: { bodyMs: 300 },
      },
    });
  });
  after(async () => gw.close());

  test('a body that does not arrive within timeouts.bodyMs is a 408 and its connection is closed', async () => {
    gw.fake.reset();
    const head = requestHead(gw.url, '/v1/messages', 1000, {
      'x-api-key': team.key,
      'anthropic-version': '2023-06-01',
    });
    const outcome = await sendPartialRequest(gw.url, head, '{"model":"claude-test",', 10_000);
    assert.ok(outcome.closedByServer, 'the gateway closed the connection');
    assert.equal(statusOf(outcome.received), 408, outcome.received);
    assert.match(outcome.received, /timeouts\.bodyMs/);
    assert.match(outcome.received, /"type":"error"/, 'in the Anthropic shape');
    const json = JSON.parse(outcome.received.slice(outcome.received.indexOf('\r\n\r\n') + 4)) as unknown;
    assertDocumented('POST', '/v1/messages', { status: 408, json });
    assert.equal(gw.fake.requests.length, 0);
  });

  test('a wrong key answers 401 and closes at once instead of reading a large body', async () => {
    const head = requestHead(gw.url, '/v1/chat/completions', 900_000, {
      authorization: 'Bearer not-a-team-key',
    });
    // Far shorter than timeouts.bodyMs would need to close it for the body's sake: the 401 closes it.
    const outcome = await sendPartialRequest(gw.url, head, 'x'.repeat(1000), 250);
    assert.equal(statusOf(outcome.received), 401, outcome.received);
    assert.match(outcome.received, /connection: close/i);
    assert.ok(outcome.closedByServer, 'closed without waiting for the other 899,000 bytes');
  });

  test('a declared length over server.bodyLimit answers 413 and closes at once', async () => {
    const head = requestHead(gw.url, '/v1/messages', 60_000_000, {
      'x-api-key': team.key,
      'anthropic-version': '2023-06-01',
    });
    const outcome = await sendPartialRequest(gw.url, head, 'x'.repeat(1000), 250);
    assert.equal(statusOf(outcome.received), 413, outcome.received);
    assert.ok(outcome.closedByServer);
    assert.equal(gw.fake.requests.length, 0);
  });
});

describe('bounded connections: idle sockets make room, one address has a cap of its own', () => {
  const team = newKey();
  let gw: TestGateway;
  before(async () => {
    // The default timeouts.bodyMs: a request whose body is slow to come stays in flight.
    gw = await startGateway({ config: { teams: [{ name: 'solo', keys: [team.hash] }] } });
  });
  after(async () => gw.close());

  /** A gateway server of `gw`'s app with these connection caps, listening on loopback. */
  async function cappedServer(caps: { maxConnections: number; maxConnectionsPerAddress?: number }) {
    const config = {
      ...gw.gateway.context.config,
      server: { ...gw.gateway.context.config.server, maxConnectionsPerAddress: 1024, ...caps },
    };
    const s = createGatewayServer(gw.gateway, config);
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return {
      port: (s.address() as AddressInfo).port,
      count: () => new Promise<number>((resolve) => s.getConnections((_e, n) => resolve(n))),
      close: async () => {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      },
    };
  }
  /** A connection to `port`, from `localAddress` when given (another loopback address). */
  const open = (port: number, localAddress?: string): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) }, () =>
        resolve(s),
      );
      s.once('error', reject);
    });
  /** Resolves once the server closed `socket` (after writing `write`, when given). */
  const closedByServer = (socket: Socket, write?: string): Promise<void> =>
    new Promise<void>((resolve) => {
      socket.on('error', () => {});
      if (socket.destroyed) return resolve();
      socket.once('close', () => resolve());
      if (write) socket.write(write);
    });
  /**
   * Starts a request on `socket` whose body is slow to come (in flight until timeouts.bodyMs);
   * resolves once the gateway has it in flight (it asked for the body with a 100 Continue).
   */
  const holdRequest = (socket: Socket, port: number): Promise<void> =>
    new Promise((resolve) => {
      let got = '';
      socket.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (got.includes('100 Continue')) resolve();
      });
      socket.write(
        `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
          `Content-Length: 1000\r\nExpect: 100-continue\r\nx-api-key: ${team.key}\r\n` +
          `anthropic-version: 2023-06-01\r\n\r\n`,
      );
    });
  /** A keep-alive health check, answered and left open. */
  const healthz = (port: number) => `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
  /** Writes `text` on `socket`; resolves with the answer's status line once the answer is in. */
  const exchange = (socket: Socket, text: string): Promise<string> =>
    new Promise((resolve, reject) => {
      let got = '';
      const onData = (d: Buffer) => {
        got += d.toString('latin1');
        const end = got.indexOf('\r\n\r\n');
        if (end === -1) return;
        const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? 0);
        if (got.length - end - 4 < length) return;
        socket.off('data', onData);
        resolve(got.slice(0, got.indexOf('\r\n')));
      };
      socket.on('data', onData);
      socket.once('close', () => reject(new Error(`closed; received: ${got}`)));
      socket.write(text);
    });
  /** A team's call on a new connection from `localAddress` (or 127.0.0.1): its status. */
  const call = async (port: number, localAddress?: string): Promise<string> => {
    const s = await open(port, localAddress);
    const body = JSON.stringify(messagesBody());
    try {
      return await exchange(
        s,
        `POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nx-api-key: ${team.key}\r\n` +
          `anthropic-version: 2023-06-01\r\n\r\n${body}`,
      );
    } finally {
      s.destroy();
    }
  };
  const closedCount = async (reason: string) =>
    (await gw.gateway.context.metrics.connectionsClosed.get()).values.find((v) => v.labels.reason === reason)
      ?.value ?? 0;

  test('server.maxConnections: with every connection in a request, further sockets are closed as they arrive', async () => {
    const server = await cappedServer({ maxConnections: 2 });
    const held = [await open(server.port), await open(server.port)];
    // Both hold a request in flight, so neither may be closed to make room.
    await Promise.all(held.map((s) => holdRequest(s, server.port)));
    const refusedBefore = await closedCount('refused-gateway');
    const third = await open(server.port);
    await closedByServer(third, healthz(server.port));
    assert.equal(await closedCount('refused-gateway'), refusedBefore + 1, 'the third socket was refused');
    assert.deepEqual(
      held.map((s) => s.destroyed),
      [false, false],
      'the connections in a request were left alone',
    );
    held[0]!.destroy();
    await until(async () => {
      const r = await fetch(`http://127.0.0.1:${server.port}/healthz`).catch(() => undefined);
      return r?.status === 200;
    }, 'a slot frees up');
    for (const s of held) s.destroy();
    await server.close();
  });

  test('idle keep-alive connections at server.maxConnections do not keep a new client out', async () => {
    gw.fake.reset();
    const server = await cappedServer({ maxConnections: 4 });
    // The attack: every connection the gateway allows, each kept alive by health checks.
    const idle: Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const s = await open(server.port);
      assert.equal(await exchange(s, healthz(server.port)), 'HTTP/1.1 200 OK');
      idle.push(s);
    }
    // One of them checks again: it is now the most recently used.
    assert.equal(await exchange(idle[0]!, healthz(server.port)), 'HTTP/1.1 200 OK');
    assert.equal(await server.count(), 4);

    // A team's call on a new connection is served: the longest idle connection made room for it.
    assert.equal(await call(server.port), 'HTTP/1.1 200 OK');
    assert.equal(gw.fake.requests.length, 1, 'the provider got the call');
    await closedByServer(idle[1]!);
    assert.deepEqual(
      idle.map((s) => s.destroyed),
      [false, true, false, false],
      'the longest idle connection was closed, the others stay open',
    );
    for (const s of idle) s.destroy();
    await server.close();
  });

  test('server.maxConnectionsPerAddress: one address cannot take every connection', async (t) => {
    const server = await cappedServer({ maxConnections: 4, maxConnectionsPerAddress: 3 });
    // One address holds requests open on as many connections as it can: those past its cap are
    // closed as they arrive.
    const refusedBefore = await closedCount('refused-address');
    const held: Socket[] = [];
    for (let i = 0; i < 5; i++) {
      const s = await open(server.port);
      s.on('error', () => {});
      if (i < 3) await holdRequest(s, server.port);
      held.push(s);
    }
    await Promise.all(held.slice(3).map((s) => closedByServer(s, 'GET /healthz HTTP/1.1\r\n\r\n')));
    assert.equal(await closedCount('refused-address'), refusedBefore + 2);
    assert.deepEqual(
      held.map((s) => s.destroyed),
      [false, false, false, true, true],
    );
    assert.equal(await server.count(), 3, 'the address holds its 3 of the 4');
    // Another address still gets in, although this one asked for every connection.
    const other = await open(server.port, '127.0.0.2').catch(() => undefined);
    if (!other) t.diagnostic('no second loopback address here: the other client is not tried');
    else {
      other.destroy();
      gw.fake.reset();
      assert.equal(await call(server.port, '127.0.0.2'), 'HTTP/1.1 200 OK');
      assert.equal(gw.fake.requests.length, 1);
    }
    for (const s of held) s.destroy();
    await server.close();
  });
});

describe('repair rounds: capped, and doubling when the refusal names no count', () => {
  /** 200 distinct tiny PNGs in one Anthropic request. */
  const images = Array.from({ length: 200 }, (_, i) => ({
    type: 'image',
    source: {
      type: 'base64',
      media_type: 'image/png',
      data: makePng(1 + (i % 20), 1 + Math.floor(i / 20)).toString('base64'),
    },
  }));
  const body = {
    model: 'claude-test',
    max_tokens: 10,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, ...images] }],
  };
  /** A provider that refuses more than 100 images without saying how many were sent. */
  const refuseOver100 = (fake: FakeProvider) => {
    for (let i = 0; i < 300; i++) {
      fake.script((rec) =>
        countImages(rec.json ?? {}).length > 100
          ? {
              status: 400,
              json: {
                type: 'error',
                error: { type: 'invalid_request_error', message: 'Too many images in this request.' },
              },
            }
          : undefined,
      );
    }
  };

  test('each round sets aside twice as many as the one before: 200 images take 7 rounds, not 100', async () => {
    const gw = await startGateway();
    try {
      refuseOver100(gw.fake);
      const r = await rawRequest(gw.url, {
        path: '/v1/messages',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.deepEqual(
        gw.fake.requests.map((q) => countImages(q.json ?? {}).length),
        [200, 199, 197, 193, 185, 169, 137, 73],
      );
      assert.equal(r.headers['x-oda-images-set-aside'], '127');
    } finally {
      await gw.close();
    }
  });

  test('repairs.maxRounds caps the rounds; then the refusal goes back to the client', async () => {
    const gw = await startGateway({ config: { repairs: { maxRounds: 3 } } });
    try {
      refuseOver100(gw.fake);
      const r = await rawRequest(gw.url, {
        path: '/v1/messages',
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify(body),
      });
      assert.equal(r.status, 400);
      assert.match(r.text, /Too many images/);
      assert.equal(r.headers['x-should-retry'], 'false');
      assert.equal(gw.fake.requests.length, 4, 'the first call and three repair rounds');
    } finally {
      await gw.close();
    }
  });
});
