/**
 * A lock shared by every gateway replica on one Redis: a script that sets the key to a random token
 * per holder when it is free (`SET NX PX` in effect) and also answers yes when the key already holds
 * that token, renewed while held so a long critical section keeps it, released by a
 * compare-and-delete script so a holder never frees a lock that expired and was taken by another.
 * All three are safe to run again when a dropped connection lost their reply: taking the lock again
 * finds its own token instead of waiting on itself until the lease runs out. Waiting uses a small
 * capped backoff; past `waitMs` (which outlasts the lease: a dead holder's lock is always outwaited)
 * the caller gets a 503, never a hang. A holder that cannot tell
 * whether it took the lock (Redis gone meanwhile) gives up with a 503 and frees it when it can.
 *
 * The lease only keeps replicas from working on one chat at the same time; the append script's
 * expected-count check is what makes a stale holder (paused past its lease) unable to duplicate or
 * interleave events.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { OdaError } from '../lib/errors.ts';

/**
 * Runs one Redis operation, turning connection failures into 503s (see store-redis-connection.ts);
 * `repeat` tells an operation run again after a lost reply that its first run may have applied.
 */
export type RedisRun = <T>(op: (redis: Redis, repeat: boolean) => Promise<T>) => Promise<T>;

export interface RedisLockOptions {
  /** Lease of the lock; renewed every third of it while the holder runs. */
  ttlMs: number;
  /**
   * How long a caller waits for the lock before giving up with a 503: never less than the lease and
   * a margin (`leaseOutwaited`), so a lock its holder left when it died (its last renewal gave it
   * a whole lease) frees itself before the wait ends.
   */
  waitMs: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

// Takes the lock for ARGV[1] with a lease of ARGV[2] ms: 1 when it is free or already this token's.
const ACQUIRE = `
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if held then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

/** Pause between tries to free a lock that may have been taken as Redis went away. */
const RELEASE_RETRY_MS = 200;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The shortest wait that outlasts a lease of `ttlMs`: the lease and a fifth of it more, at least
 * 500 ms (room for the pauses between tries and the round trips to Redis).
 */
export function leaseOutwaited(ttlMs: number): number {
  return ttlMs + Math.max(500, Math.ceil(ttlMs / 5));
}

/** Exclusive sections keyed by a Redis key, across processes. */
export class RedisLock {
  private readonly run: RedisRun;
  private readonly opts: Required<RedisLockOptions>;

  /** `run` runs its operations again after a lost reply (they are all safe to repeat). */
  constructor(run: RedisRun, opts: RedisLockOptions) {
    this.run = run;
    this.opts = {
      sleep: defaultSleep,
      random: Math.random,
      ...opts,
      waitMs: Math.max(opts.waitMs, leaseOutwaited(opts.ttlMs)),
    };
  }

  /** Runs `fn` while holding the lock at `key`; `what` names the resource in the 503 message. */
  async hold<T>(key: string, what: string, fn: () => Promise<T>): Promise<T> {
    const token = randomBytes(16).toString('hex');
    await this.acquire(key, token, what);
    const renew = setInterval(
      () => {
        this.run((r) => r.eval(RENEW, 1, key, token, String(this.opts.ttlMs))).catch(() => undefined);
      },
      Math.max(10, Math.floor(this.opts.ttlMs / 3)),
    );
    renew.unref();
    try {
      return await fn();
    } finally {
      clearInterval(renew);
      // When Redis is gone the lease simply runs out; the section's own outcome is what counts.
      await this.release(key, token);
    }
  }

  /**
   * Frees the lock if it still holds `token`. A try that fails (Redis gone) is tried again until
   * `until` (by then the lease has run out anyway; the retries never keep the process up).
   */
  private async release(key: string, token: string, until = 0): Promise<void> {
    for (;;) {
      try {
        await this.run((r) => r.eval(RELEASE, 1, key, token));
        return;
      } catch {
        if (Date.now() >= until) return;
        await new Promise<void>((resolve) => setTimeout(resolve, RELEASE_RETRY_MS).unref());
      }
    }
  }

  private async acquire(key: string, token: string, what: string): Promise<void> {
    const { ttlMs, waitMs, sleep, random } = this.opts;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      let got: unknown;
      try {
        got = await this.run((r) => r.eval(ACQUIRE, 1, key, token, String(ttlMs)));
      } catch (err) {
        // It may have been taken before Redis went away: free it once Redis answers again, rather
        // than leave every replica waiting for the lease to run out.
        void this.release(key, token, Date.now() + ttlMs);
        throw err;
      }
      if (got === 1) return;
      const waited = Date.now() - started;
      if (waited >= waitMs) {
        throw new OdaError(
          'ODA_ERR_STORE_UNAVAILABLE',
          503,
          `${what} is busy: its lock could not be had within ${waitMs} ms`,
          {
            headers: { 'retry-after': '1' },
          },
        );
      }
      const base = Math.min(100, 5 * 2 ** Math.min(attempt, 5));
      await sleep(Math.min(waitMs - waited, Math.ceil(base * (0.5 + random() / 2))));
    }
  }
}
