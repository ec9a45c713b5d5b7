/**
 * The repair loop (SPEC section 3, step 5). Two retry layers kept apart:
 * - transport retries (connection errors, 408/409/429/5xx/529), budgeted by `retries.maxRetries`,
 *   with the SDKs' backoff and `x-should-retry` / `retry-after-ms` / `retry-after`;
 * - repairs (image set-aside, overflow trimming, taking out a prompt-cache key or a stream-usage
 *   ask the provider refuses), unbudgeted and bounded by what is left to repair.
 * A failure is handled by exactly one of them. Nothing here runs after bytes reached the client:
 * the loop returns a successful response with its body unread.
 */
import type { Refusal } from '../providers/provider.ts';
import { UpstreamError, type UpstreamResponse } from '../providers/upstream-client.ts';
import { askedDelayMs, backoffDelayMs } from './backoff.ts';

export interface RepairHooks {
  /** Sets images aside for an image-limit refusal; true when the request changed and should go again. */
  imageLimit(refusal: Extract<Refusal, { kind: 'image-limit' }>): Promise<boolean>;
  /** Trims tool results after a context-overflow refusal; true when the request changed. */
  contextOverflow(): Promise<boolean>;
  /** Takes out the prompt-cache key the gateway added, which the provider refused; true when it did. */
  cacheKeyRefused(): Promise<boolean>;
  /** Takes out the stream-usage ask the gateway added, which the provider refused; true when it did. */
  streamOptionsRefused(): Promise<boolean>;
}

/** The kinds of refusal a repair round answers. */
export type RepairKind = 'image-limit' | 'context-overflow' | 'cache-key-refused' | 'stream-options-refused';

export interface RepairLoopOptions {
  send(): Promise<UpstreamResponse>;
  classify(status: number, bodyText: string): Refusal;
  repairs: RepairHooks;
  retries: { maxRetries: number; initialDelayMs: number; maxDelayMs: number };
  /** Waits `ms` before a retry; ends early when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Aborted when the call's client went away (or the shutdown cut the call): a backoff under way
   * ends, and no further attempt is made.
   */
  signal?: AbortSignal;
  now(): number;
  random(): number;
  /** Called for every transport retry decided, with its reason and its wait (for the log). */
  onRetry?(reason: string, delayMs: number): void;
  /** Called when a retry decided is made: its wait is over and the client is still there. */
  onRetried?(reason: string): void;
  /** Kept up to date with the attempts and retries so far, also when the loop throws. */
  progress?: { attempts: number; retries: number };
  /** Called for every repair round that changed the request. */
  onRepair?(kind: RepairKind): void;
}

/**
 * Why the loop stopped retrying a failure a retry might change: the budget ran out, or the
 * provider asked for a longer wait than `retries.maxDelayMs` (the gateway does not hold a request
 * that long; SPEC section 3).
 */
export type GaveUp =
  { reason: 'retries-exhausted' } | { reason: 'retry-delay-too-long'; askedDelayMs: number };

export type RepairLoopResult =
  | { ok: true; res: UpstreamResponse; attempts: number; retries: number }
  | {
      ok: false;
      res: UpstreamResponse;
      /** The refusal body, already read. */
      bodyText: string;
      refusal: Refusal;
      attempts: number;
      retries: number;
      /** Set when the last failure was one a retry might change and the loop stopped retrying it. */
      gaveUp?: GaveUp;
    };

function header(res: UpstreamResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Runs attempts until success, a final refusal, or an upstream error past the retry budget. */
export async function runRepairLoop(opts: RepairLoopOptions): Promise<RepairLoopResult> {
  let attempts = 0;
  let retries = 0;
  const progress = opts.progress ?? { attempts: 0, retries: 0 };
  /** The reason of the retry decided last, until it is made. */
  let retrying: string | undefined;
  for (;;) {
    // Nobody is left to answer (the client left during the backoff, or before the first attempt):
    // no attempt is sent, and none is counted, as none was made.
    if (opts.signal?.aborted) throw new UpstreamError('aborted', 'request aborted before the next attempt');
    if (retrying !== undefined) opts.onRetried?.(retrying);
    retrying = undefined;
    attempts++;
    progress.attempts = attempts;
    progress.retries = retries;
    let res: UpstreamResponse;
    try {
      res = await opts.send();
    } catch (e) {
      const err = e instanceof UpstreamError ? e : undefined;
      // An abort (client gone) or a timeout waiting for the answer is not retried.
      if (err && (err.code === 'connect' || err.code === 'reset') && retries < opts.retries.maxRetries) {
        const delay = backoffDelayMs(retries, { ...opts.retries, random: opts.random });
        retries++;
        retrying = `connection:${err.code}`;
        opts.onRetry?.(retrying, delay);
        await opts.sleep(delay, opts.signal);
        continue;
      }
      throw e;
    }
    if (res.status >= 200 && res.status < 300) return { ok: true, res, attempts, retries };

    // Read the refusal (small) and release the connection before anything else.
    const bodyText = await res.body.text().catch(() => '');
    const refusal = opts.classify(res.status, bodyText);
    if (refusal.kind === 'image-limit') {
      if (await opts.repairs.imageLimit(refusal)) {
        opts.onRepair?.('image-limit');
        continue;
      }
    } else if (refusal.kind === 'context-overflow') {
      if (await opts.repairs.contextOverflow()) {
        opts.onRepair?.('context-overflow');
        continue;
      }
    } else if (refusal.kind === 'cache-key-refused') {
      if (await opts.repairs.cacheKeyRefused()) {
        opts.onRepair?.('cache-key-refused');
        continue;
      }
    } else if (refusal.kind === 'stream-options-refused') {
      if (await opts.repairs.streamOptionsRefused()) {
        opts.onRepair?.('stream-options-refused');
        continue;
      }
    }
    const shouldRetry = header(res, 'x-should-retry');
    const retryable = shouldRetry === 'true' || (shouldRetry !== 'false' && refusal.kind === 'transient');
    if (!retryable) return { ok: false, res, bodyText, refusal, attempts, retries };
    if (retries >= opts.retries.maxRetries)
      return {
        ok: false,
        res,
        bodyText,
        refusal,
        attempts,
        retries,
        gaveUp: { reason: 'retries-exhausted' },
      };
    const asked = askedDelayMs(res.headers, opts.now());
    if (asked !== undefined && asked > opts.retries.maxDelayMs) {
      const gaveUp: GaveUp = { reason: 'retry-delay-too-long', askedDelayMs: asked };
      return { ok: false, res, bodyText, refusal, attempts, retries, gaveUp };
    }
    const delay = asked ?? backoffDelayMs(retries, { ...opts.retries, random: opts.random });
    retries++;
    retrying = `status:${res.status}`;
    opts.onRetry?.(retrying, delay);
    await opts.sleep(delay, opts.signal);
  }
}
