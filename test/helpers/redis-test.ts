/**
 * Redis for tests: the URL comes from REDIS_URL (scripts/run-tests.mjs starts a private server and
 * sets it); without it the Redis tests are skipped with `redisSkip` as the reason. Every test works
 * under its own key prefix and removes its keys afterwards, so runs never collide.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const redisUrl: string | undefined = process.env.REDIS_URL || undefined;

/** The `skip` option of a Redis test: false when Redis is available, else why the test is skipped. */
export const redisSkip: string | false = redisUrl
  ? false
  : 'REDIS_URL is not set (npm test starts a private redis-server when one is installed)';

/** A key prefix no other test uses. */
export function uniquePrefix(name: string): string {
  return `oda-test:${name}:${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under `prefix`. */
export async function dropPrefix(prefix: string, url = redisUrl): Promise<void> {
  if (!url) return;
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Keys under `prefix` (to check what a test left). */
export async function keysUnder(prefix: string, url = redisUrl): Promise<string[]> {
  if (!url) return [];
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    await redis.connect();
    return (await redis.keys(`${prefix}*`)).sort();
  } finally {
    redis.disconnect();
  }
}
