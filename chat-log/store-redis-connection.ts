/**
 * The Redis store's one connection (`store-redis.ts`), set to fail fast: no offline queue, one
 * retry, timeouts, so while Redis is unreachable every call is a 503 ODA_ERR_STORE_UNAVAILABLE
 * within about a second, never a hang; it keeps reconnecting so the gateway recovers by itself.
 *
 * A command is never sent twice behind the store's back: ioredis would resend the commands still
 * waiting for a reply when a connection drops, and one that Redis had already run before the drop
 * would then run twice (an append stored twice, a lock waiting on its own token). That resend is
 * off; an operation whose connection drops before its reply arrives fails at once with a "reply
 * lost". `run` reports that as a 503. `runRepeatable` is for operations written to be safe to run
 * again (reads, and scripts told that they are a repeat so they recognise what their first run
 * already did): it runs them again once reconnected, at most MAX_ATTEMPTS times in all.
 */
import { Redis } from 'ioredis';
import { isOdaError } from '../lib/errors.ts';
import { unavailable } from './store-redis-replies.ts';

/** One operation on the connection; `repeat` is true when an earlier run of it lost its reply. */
export type RedisOp<T> = (redis: Redis, repeat: boolean) => Promise<T>;

/** Runs of one repeatable operation whose replies were lost before it is given up with a 503. */
const MAX_ATTEMPTS = 3;

export interface RedisConnectionOptions {
  url: string;
  /** How long a call waits for a (re)connection before answering 503. */
  readyWaitMs: number;
  connectTimeoutMs: number;
  /** A command without a reply in this time fails (a stalled Redis). */
  commandTimeoutMs: number;
  /** Told about the first connection error after each stretch of being connected. */
  onError?: (err: Error) => void;
}

/** The connection dropped while an operation waited for its reply: it may or may not have run. */
class ReplyLost extends Error {
  constructor() {
    super('the connection dropped before Redis replied');
    this.name = 'ReplyLost';
  }
}

/** One Redis connection and the rules its operations run by; see the file comment. */
export class RedisConnection {
  readonly redis: Redis;
  private readonly opts: RedisConnectionOptions;
  /** Fails each operation waiting for a reply, when the connection drops. */
  private readonly waiting = new Set<(err: Error) => void>();
  private waitingForReady: Promise<boolean> | undefined;
  /** Settles when the first connection attempt has: connected, failed, or run out of time. */
  private readonly firstAttempt: Promise<void>;
  private firstAttemptOver = false;
  private errorReported = false;
  private closed = false;

  constructor(opts: RedisConnectionOptions) {
    this.opts = opts;
    this.redis = new Redis(opts.url, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      // Never resend a command whose reply was lost: it may have run already (see the file comment).
      autoResendUnfulfilledCommands: false,
      connectTimeout: opts.connectTimeoutMs,
      commandTimeout: opts.commandTimeoutMs,
      // Keep reconnecting (at most once a second) so the gateway recovers when Redis is back.
      retryStrategy: (times) => Math.min(100 * times, 1000),
    });
    this.redis.on('error', (err: Error) => {
      if (this.errorReported) return;
      this.errorReported = true;
      opts.onError?.(err);
    });
    this.redis.on('ready', () => {
      this.errorReported = false;
    });
    // A call made while the very first attempt is still under way (the first requests after start,
    // on a busy machine) waits for that attempt, up to its connect timeout, rather than only
    // `readyWaitMs`: a Redis not yet reached is not a Redis that is down.
    this.firstAttempt = new Promise<void>((resolve) => {
      const over = () => {
        clearTimeout(timer);
        this.firstAttemptOver = true;
        for (const event of ['ready', 'error', 'end'] as const) this.redis.off(event, over);
        resolve();
      };
      const timer = setTimeout(over, opts.connectTimeoutMs);
      timer.unref();
      for (const event of ['ready', 'error', 'end'] as const) this.redis.on(event, over);
    });
    // Without the resend, ioredis drops the unanswered commands silently (until their timeout).
    this.redis.on('close', () => {
      const dropped = [...this.waiting];
      this.waiting.clear();
      for (const fail of dropped) fail(new ReplyLost());
    });
  }

  get status(): string {
    return this.redis.status;
  }

  /** True once connected; a call during the first attempt waits for it first (see the constructor). */
  private async connected(): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    if (!this.firstAttemptOver) {
      await this.firstAttempt;
      // Read again: the status changed while waiting (a plain re-check is narrowed away by tsc).
      if (this.status === 'ready') return true;
    }
    return this.waitForReady();
  }

  /** Resolves true once connected, false when not connected within `readyWaitMs`. */
  private waitForReady(): Promise<boolean> {
    if (this.closed || this.redis.status === 'end') return Promise.resolve(false);
    this.waitingForReady ??= new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        this.waitingForReady = undefined;
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), this.opts.readyWaitMs);
      this.redis.on('ready', onReady);
    });
    return this.waitingForReady;
  }

  /**
   * Runs `op` once. Not connected, a dropped connection or a timeout is a 503
   * ODA_ERR_STORE_UNAVAILABLE; errors Redis itself replies with (a bug) stay as they are.
   */
  async run<T>(op: RedisOp<T>): Promise<T> {
    try {
      return await this.attempt(op, false);
    } catch (err) {
      throw this.failure(err);
    }
  }

  /**
   * Runs `op`, which must be safe to run again, and runs it again (with `repeat` true) when its
   * reply was lost, once reconnected. Past MAX_ATTEMPTS, or not reconnected in time, a 503 that says
   * the outcome is unknown.
   */
  async runRepeatable<T>(op: RedisOp<T>): Promise<T> {
    let lost = false;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(op, lost);
      } catch (err) {
        if (!(err instanceof ReplyLost) || attempt >= MAX_ATTEMPTS) throw this.failure(err, lost);
        lost = true;
      }
    }
  }

  /** One run of `op`; a ReplyLost when the connection dropped before its reply. */
  private async attempt<T>(op: RedisOp<T>, repeat: boolean): Promise<T> {
    if (this.closed) throw new Error('the store is closed');
    if (!(await this.connected())) throw new Error(`not connected (${this.redis.status})`);
    return new Promise<T>((resolve, reject) => {
      const dropped = (err: Error) => reject(err);
      this.waiting.add(dropped);
      op(this.redis, repeat)
        .then(resolve, (err: unknown) => {
          // A command aborted by the drop itself (part of a pipeline) fails before 'close' is told.
          const lostToDrop = this.redis.status !== 'ready' && !isOdaError(err) && !isReplyError(err);
          reject(lostToDrop ? new ReplyLost() : err);
        })
        .finally(() => this.waiting.delete(dropped));
    });
  }

  /** The error a caller gets for a failed run; `lostBefore`: an earlier run's reply was lost. */
  private failure(err: unknown, lostBefore = false): unknown {
    // Thrown by the operation itself (a 404, a refused batch) or replied by Redis (a bug): as it is.
    if (isOdaError(err) || isReplyError(err)) return err;
    const detail = err instanceof Error ? err.message : String(err);
    const unknown = 'it may or may not have been applied';
    if (err instanceof ReplyLost) return unavailable(`${detail}, so ${unknown}`, err, true);
    return unavailable(
      lostBefore ? `${detail} after an earlier try lost its reply: ${unknown}` : detail,
      err,
      lostBefore,
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.redis.status === 'ready') {
      await this.redis.quit().catch(() => this.redis.disconnect());
    } else {
      this.redis.disconnect();
    }
  }
}

function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}
