import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryRateCounter, RedisRateCounter, WINDOW_MS } from './rate-limit.ts';
import { RedisLogBackend } from '../chat-log/store-redis.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';

describe('MemoryRateCounter', () => {
  test('counts per team and window; a new window starts from 1', async () => {
    const c = new MemoryRateCounter();
    assert.deepEqual(
      [await c.hit('a', 7), await c.hit('a', 7), await c.hit('b', 7), await c.hit('a', 7)],
      [1, 2, 1, 3],
    );
    assert.equal(await c.hit('a', 8), 1);
    assert.equal(await c.hit('a', 8), 2);
  });
});

describe('RedisRateCounter', { skip: redisSkip }, () => {
  const prefix = uniquePrefix('ratelimit');
  const backends: RedisLogBackend[] = [];
  after(async () => {
    await Promise.all(backends.map((b) => b.close()));
    await dropPrefix(prefix);
  });

  test('two replicas count against one budget per team and window; the window key expires', async () => {
    backends.push(
      new RedisLogBackend({ url: redisUrl!, prefix }),
      new RedisLogBackend({ url: redisUrl!, prefix }),
    );
    const [a, b] = backends.map((backend) => new RedisRateCounter((op) => backend.run(op), prefix));
    const counts = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a! : b!).hit('research', 100)),
    );
    assert.deepEqual(
      [...counts].sort((x, y) => x - y),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    );
    assert.equal(await a!.hit('design', 100), 1);
    assert.equal(await b!.hit('research', 101), 1);
    const ttl = await backends[0]!.run((r) => r.pttl(`${prefix}ratelimit:research:100`));
    assert.ok(ttl > WINDOW_MS && ttl <= 2 * WINDOW_MS, `pttl ${ttl}`);
  });
});
