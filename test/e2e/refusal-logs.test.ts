/**
 * What a flood of refusals writes to the log: every refusal a caller can cause at will (a wrong key,
 * a 429, a malformed body, an unknown path, a WebSocket handshake, a foreign Origin, a body that
 * never comes, a refused connection, a credential the provider refuses to list models for) is
 * answered and counted in /metrics each time, but logged once per kind and source and interval
 * (10 s of the app's clock), the next line saying how many were left out.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { Captured } from '../helpers/captured-log.ts';
import { rawRequest, requestHead, sendPartialRequest, statusOf } from '../helpers/raw-http.ts';
import { newKey } from '../../server/cli-keys.ts';
import { createLogger } from '../../server/logger.ts';
import { createGatewayServer } from '../../server/listen.ts';

type Line = Record<string, unknown>;

/** The lines of `logs` whose message matches `msg`. */
function linesOf(logs: Captured, msg: RegExp): Line[] {
  return logs.text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Line)
    .filter((l) => msg.test(String(l.msg)));
}

/** Requests counted in oda_requests_total with `status`, all routes. */
async function counted(gw: TestGateway, status: number): Promise<number> {
  const { values } = await gw.gateway.context.metrics.requests.get();
  return values.filter((v) => v.labels.status === String(status)).reduce((n, v) => n + v.value, 0);
}

const chatBody = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });

describe('refusals with teams: wrong keys, rate limits, refused connections', () => {
  const busy = newKey();
  const calm = newKey();
  const logs = new Captured();
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [
          { name: 'busy', keys: [busy.hash], requestsPerMinute: 2 },
          { name: 'calm', keys: [calm.hash] },
        ],
      },
      deps: { logger: createLogger('info', logs) },
    });
  });
  after(async () => gw.close());

  const post = (key: string) =>
    rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: chatBody,
    });

  test('30 wrong keys: 30 answers of 401 and 30 counts, one log line; the next interval says 29 were left out', async () => {
    const before401 = await counted(gw, 401);
    for (let i = 0; i < 30; i++) assert.equal((await post(`oda_wrong-${i}`)).status, 401);
    assert.equal((await counted(gw, 401)) - before401, 30, '/metrics counts each one');
    const lines = linesOf(logs, /invalid team key/);
    assert.equal(lines.length, 1, 'one line for 30 refusals');
    assert.equal(lines[0]!.code, 'ODA_ERR_UNAUTHORIZED');
    assert.equal(lines[0]!.address, '127.0.0.1');
    assert.equal(lines[0]!.suppressed, undefined);

    gw.clock.advance(10_000);
    assert.equal((await post('oda_wrong-late')).status, 401);
    const after = linesOf(logs, /invalid team key/);
    assert.equal(after.length, 2);
    assert.equal(after[1]!.suppressed, 29);
    assert.ok(!logs.text.includes('oda_wrong-'), 'no presented key is logged');
  });

  test('a team over its rate limit: every 429 answered, one line naming the team, not its address', async () => {
    const before429 = await counted(gw, 429);
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await post(busy.key)).status);
    assert.deepEqual(statuses, [200, 200, ...Array<number>(10).fill(429)]);
    assert.equal((await counted(gw, 429)) - before429, 10);
    const lines = linesOf(logs, /over its limit/);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.team, 'busy');
    assert.equal(lines[0]!.code, 'ODA_ERR_RATE_LIMITED');
    assert.equal(lines[0]!.address, undefined, 'the team is the source, not its address');
  });

  test('connections refused at server.maxConnectionsPerAddress: each closed and counted, one warning', async () => {
    const config = {
      ...gw.gateway.context.config,
      server: { ...gw.gateway.context.config.server, maxConnections: 64, maxConnectionsPerAddress: 1 },
    };
    const server = createGatewayServer(gw.gateway, config);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const open = () =>
      new Promise<Socket>((resolve, reject) => {
        const s = connect({ port, host: '127.0.0.1' }, () => resolve(s));
        s.on('error', reject);
      });
    const refusedCount = async () =>
      (await gw.gateway.context.metrics.connectionsClosed.get()).values.find(
        (v) => v.labels.reason === 'refused-address',
      )?.value ?? 0;
    // The address's one connection holds a request in flight (its body is slow to come).
    const held = await open();
    try {
      await new Promise<void>((resolve) => {
        held.on('data', (d: Buffer) => {
          if (d.toString('latin1').includes('100 Continue')) resolve();
        });
        held.write(
          `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
            `Content-Length: 1000\r\nExpect: 100-continue\r\nAuthorization: Bearer ${calm.key}\r\n\r\n`,
        );
      });
      const refusedBefore = await refusedCount();
      for (let i = 0; i < 15; i++) {
        const s = await open();
        s.on('error', () => {});
        await new Promise<void>((resolve) => {
          if (s.destroyed) return resolve();
          s.once('close', () => resolve());
        });
      }
      assert.equal((await refusedCount()) - refusedBefore, 15, '/metrics counts each refusal');
      const lines = linesOf(logs, /connection refused: server\.maxConnectionsPerAddress/);
      assert.equal(lines.length, 1, 'one warning for 15 refusals');
      assert.equal(lines[0]!.level, 40);
      assert.equal(lines[0]!.address, '127.0.0.1');
    } finally {
      held.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('refusals on an open gateway: what any caller can send', () => {
  const logs = new Captured();
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: { timeouts: { bodyMs: 200 } },
      deps: { logger: createLogger('info', logs) },
    });
  });
  after(async () => gw.close());

  test('malformed JSON, unknown paths, WebSocket handshakes, foreign origins: each answered, one line per kind', async () => {
    const statuses = new Map<number, number>();
    const note = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
    for (let i = 0; i < 8; i++) {
      note(
        (
          await rawRequest(gw.url, {
            path: '/v1/chat/completions',
            headers: { 'content-type': 'application/json' },
            body: `{"model": ${i}`,
          })
        ).status,
      );
      note((await rawRequest(gw.url, { method: 'GET', path: `/v1/nothing-${i}` })).status);
      note(
        (
          await rawRequest(gw.url, {
            method: 'GET',
            path: '/v1/responses',
            headers: {
              connection: 'Upgrade',
              upgrade: 'websocket',
              'sec-websocket-version': '13',
              'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            },
          })
        ).status,
      );
      note(
        (
          await rawRequest(gw.url, {
            path: '/v1/chat/completions',
            headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
            body: chatBody,
          })
        ).status,
      );
    }
    assert.deepEqual(
      [...statuses],
      [
        [400, 8],
        [404, 8],
        [426, 8],
        [403, 8],
      ],
    );
    for (const [status, n] of statuses) assert.equal(await counted(gw, status), n, `${status} counted`);
    const refusals = linesOf(logs, /./).filter((l) => typeof l.code === 'string');
    assert.deepEqual(
      refusals.map((l) => [l.code, l.address]),
      [
        ['ODA_ERR_BAD_JSON', '127.0.0.1'],
        ['ODA_ERR_NOT_FOUND', '127.0.0.1'],
        ['ODA_ERR_WEBSOCKET_UNSUPPORTED', '127.0.0.1'],
        ['ODA_ERR_FORBIDDEN', '127.0.0.1'],
      ],
    );
    assert.equal(gw.fake.requests.length, 0);
  });

  test('bodies that never come: each a 408, one line', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 4 }, () =>
        sendPartialRequest(gw.url, requestHead(gw.url, '/v1/chat/completions', 500), '{"model":', 10_000),
      ),
    );
    assert.deepEqual(
      outcomes.map((o) => statusOf(o.received)),
      [408, 408, 408, 408],
    );
    assert.equal(await counted(gw, 408), 4);
    const lines = linesOf(logs, /did not arrive in time/);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.address, '127.0.0.1');
  });

  test('credentials the provider refuses to list models for: each one asked, one warning per provider', async () => {
    const refusal = {
      status: 401,
      json: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } },
    };
    gw.fake.script(refusal, refusal, refusal, refusal, refusal);
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${gw.url}/v1/models`, {
        headers: { authorization: `Bearer sk-rotated-${i}` },
      });
      assert.equal(res.status, 200);
    }
    assert.equal(gw.fake.requests.filter((r) => r.path === '/v1/models').length, 5, 'each credential asked');
    const lines = linesOf(logs, /could not list the provider/);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.provider, 'fake-openai');
    assert.ok(!logs.text.includes('sk-rotated-'), 'no client credential is logged');
  });
});
