/**
 * Per-team rate limit (SPEC section 8). Each team with `requestsPerMinute` gets that many requests
 * per fixed one-minute window of the app's clock (windows start on the minute: floor(now / 60 s)).
 * The request over the limit, and every one after it in that window, is a 429 in the endpoint's
 * format with `retry-after` = whole seconds until the window ends. Fixed windows are simple and
 * cheap to share between replicas (one INCR per request); their known cost is that a team can
 * send up to twice its limit across a window boundary. Admins and open gateways are not limited.
 *
 * Counting is in memory for one gateway, and in Redis (INCR + PEXPIRE per team and window) when
 * the store is Redis, so every replica counts against the same budget.
 */
import type { RequestHandler } from 'express';
import type { Clock } from '../lib/clock.ts';
import { OdaError } from '../lib/errors.ts';
import type { RedisRun } from '../chat-log/redis-lock.ts';
import type { Caller } from './auth.ts';
import type { Config } from '../config/config.ts';

export const WINDOW_MS = 60_000;

/** Counts requests per team and window. */
export interface RateCounter {
  /** Adds one request of `team` in window `window` (a window number) and returns the count so far. */
  hit(team: string, window: number): Promise<number>;
}

/** Counts in this process: one entry per team, reset when its window moves on. */
export class MemoryRateCounter implements RateCounter {
  private readonly counts = new Map<string, { window: number; count: number }>();

  async hit(team: string, window: number): Promise<number> {
    const entry = this.counts.get(team);
    if (!entry || entry.window !== window) {
      this.counts.set(team, { window, count: 1 });
      return 1;
    }
    entry.count += 1;
    return entry.count;
  }
}

/** Counts in Redis so every replica shares the budget; a window's key expires after the window. */
export class RedisRateCounter implements RateCounter {
  constructor(
    private readonly run: RedisRun,
    private readonly prefix: string,
  ) {}

  async hit(team: string, window: number): Promise<number> {
    const key = `${this.prefix}ratelimit:${team}:${window}`;
    return this.run(async (r) => {
      const replies = await r
        .multi()
        .incr(key)
        .pexpire(key, 2 * WINDOW_MS)
        .exec();
      const [err, count] = replies?.[0] ?? [new Error('transaction aborted'), 0];
      if (err) throw err;
      return count as number;
    });
  }
}

/** Express middleware (after `authenticate`): 429 with `retry-after` once a team is over its limit. */
export function rateLimit(config: Pick<Config, 'teams'>, counter: RateCounter, clock: Clock): RequestHandler {
  const limits = new Map(
    (config.teams ?? []).flatMap((t) =>
      t.requestsPerMinute ? [[t.name, t.requestsPerMinute] as const] : [],
    ),
  );
  return async function rateLimitTeam(_req, res, next) {
    const team = (res.locals.caller as Caller | undefined)?.team;
    const limit = team === undefined ? undefined : limits.get(team);
    if (team === undefined || limit === undefined) return next();
    const now = clock.now();
    const window = Math.floor(now / WINDOW_MS);
    const count = await counter.hit(team, window);
    if (count > limit) {
      const retryAfter = Math.max(1, Math.ceil(((window + 1) * WINDOW_MS - now) / 1000));
      throw new OdaError(
        'ODA_ERR_RATE_LIMITED',
        429,
        `team "${team}" is over its limit of ${limit} requests per minute; retry in ${retryAfter} s`,
        { headers: { 'retry-after': String(retryAfter) } },
      );
    }
    next();
  };
}
