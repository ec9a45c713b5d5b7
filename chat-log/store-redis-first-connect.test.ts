/**
 * The Redis store's first connection: a call made while it is still being set up (the first
 * requests after start, on a busy machine) waits for it instead of answering 503 after
 * `readyWaitMs`, while a Redis that cannot be reached at all still answers 503 quickly.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { RedisLogBackend } from './store-redis.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';
import { hdr } from './test-batches.ts';
import { freePort } from '../test/helpers/free-port.ts';

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const clean of cleanups.reverse()) await clean();
});

/** A TCP proxy to Redis that holds each new connection's bytes back for `holdMs` before relaying. */
async function slowStartProxy(holdMs: number): Promise<string> {
  const target = new URL(redisUrl!);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.pause();
    setTimeout(() => {
      if (client.destroyed) return;
      const upstream = net.connect(Number(target.port || 6379), target.hostname, () => {
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      sockets.add(upstream);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
    }, holdMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as net.AddressInfo;
  return `redis://127.0.0.1:${port}`;
}

describe('RedisLogBackend: the first connection', { skip: redisSkip }, () => {
  test('a call while the first connection is still being set up waits for it (no 503)', async () => {
    const url = await slowStartProxy(1600);
    const prefix = uniquePrefix('first-connect');
    cleanups.push(() => dropPrefix(prefix));
    // readyWaitMs (1000 by default) is shorter than the proxy's hold; the connect timeout is not.
    const backend = new RedisLogBackend({ url, prefix, readyWaitMs: 1000, connectTimeoutMs: 5000 });
    cleanups.push(() => backend.close());
    assert.equal(await backend.create(hdr('first')), 'created');
    assert.deepEqual(await backend.header('first'), hdr('first'));
  });

  test('a Redis that refuses the connection is still a 503 within about readyWaitMs', async () => {
    const port = await freePort();
    const backend = new RedisLogBackend({
      url: `redis://127.0.0.1:${port}`,
      prefix: uniquePrefix('first-connect-down'),
      readyWaitMs: 300,
      connectTimeoutMs: 30_000,
    });
    cleanups.push(() => backend.close());
    const started = Date.now();
    await assert.rejects(backend.create(hdr('down')), { status: 503 });
    // Refused at once: the first attempt is over at its error, not at the 30 s connect timeout.
    assert.ok(Date.now() - started < 15_000, `answered after ${Date.now() - started} ms`);
  });
});
