/**
 * POST /v1/messages/count_tokens goes the way of every route forwarded as is (SPEC section 2): a
 * client that leaves releases the provider's request at once (it held an upstream connection until
 * the first-byte timeout, ten minutes by default), and the call is timed in
 * `oda_upstream_latency_seconds` like the others.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

describe('count_tokens forwarding', () => {
  let gw: TestGateway;
  let upstream: Server;
  let handle: (req: IncomingMessage, res: ServerResponse) => void = () => {};
  before(async () => {
    upstream = createServer((req, res) => handle(req, res));
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as AddressInfo;
    gw = await startGateway({
      config: { providers: [{ name: 'counter', format: 'anthropic', baseUrl: `http://127.0.0.1:${port}` }] },
    });
  });
  after(async () => {
    // The provider first: a request it still holds must not keep the gateway from closing.
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
    await gw.close();
  });

  const body = JSON.stringify({ model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] });
  const headers = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };

  test('a client that leaves releases the provider request at once', async () => {
    let arrived!: () => void;
    const received = new Promise<void>((resolve) => (arrived = resolve));
    let released!: () => void;
    const closed = new Promise<void>((resolve) => (released = resolve));
    handle = (req) => {
      req.resume();
      req.socket.on('close', () => released());
      arrived(); // and never answer
    };
    const client = new AbortController();
    const call = fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers,
      body,
      signal: client.signal,
    }).catch(() => undefined);
    await received;
    client.abort();
    await call;
    const outcome = await Promise.race([
      closed.then(() => 'released'),
      new Promise((resolve) => setTimeout(() => resolve('still open after 5 s'), 5000)),
    ]);
    assert.equal(outcome, 'released');
  });

  test('an answered count is passed on and timed like other forwarded calls', async () => {
    handle = (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"input_tokens":7}');
      });
    };
    const metric = async () => {
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      return Number(
        /oda_upstream_latency_seconds_count\{provider="counter",outcome="answered"\} (\d+)/.exec(text)?.[1] ??
          0,
      );
    };
    const before = await metric();
    const res = await fetch(`${gw.url}/v1/messages/count_tokens?beta=true`, {
      method: 'POST',
      headers,
      body,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { input_tokens: 7 });
    assert.equal(await metric(), before + 1);
  });
});
