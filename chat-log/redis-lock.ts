/**
 * A lock shared by every gateway replica on one Redis: `SET key token NX PX ttl` to take it (a
 * random token per holder), renewed while held so a long critical section keeps it, released by a
 * compare-and-delete script so a holder never frees a lock that expired and was taken by another.
 * Waiting uses a small capped backoff; past `waitMs` the caller gets a 503, never a hang.
 *
 * The lease only keeps replicas from working on one chat at the same time; the append script's
 * expected-count check is what makes a stale holder (paused past its lease) unable to duplicate or
 * interleave events.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { OdaError } from '../lib/errors.ts';

/** Runs one Redis operation, turning connection failures into 503s (see RedisLogBackend.run). */
export type RedisRun = <T>(op: (redis: Redis) => Promise<T>) => Promise<T>;

export interface RedisLockOptions {
  /** Lease of the lock; renewed every third of it while the holder runs. */
  ttlMs: number;
  /** How long a caller waits for the lock before giving up with a 503. */
  waitMs: number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Exclusive sections keyed by a Redis key, across processes. */
export class RedisLock {
  private readonly run: RedisRun;
  private readonly opts: Required<RedisLockOptions>;

  constructor(run: RedisRun, opts: RedisLockOptions) {
    this.run = run;
    this.opts = { sleep: defaultSleep, random: Math.random, ...opts };
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
      await this.run((r) => r.eval(RELEASE, 1, key, token)).catch(() => undefined);
    }
  }

  private async acquire(key: string, token: string, what: string): Promise<void> {
    const { ttlMs, waitMs, sleep, random } = this.opts;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const got = await this.run((r) => r.set(key, token, 'PX', ttlMs, 'NX'));
      if (got === 'OK') return;
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
