/**
 * Why a response ended before it was whole, for the request metrics
 * (`oda_requests_cut_total{reason}`) and the request's log line. The code that ends a response
 * itself says why; a response that closed without a word was cut by the client going away, or by
 * the end of the shutdown grace period when that is what closed the remaining connections. A
 * stream that closed normally can still carry an answer that is not whole (the provider closed it
 * early, or said inside it that the answer failed): the code that closes it says so too.
 */
import type { Response } from 'express';

/**
 * Why a response ended before it was whole: a bounded set, one label value each.
 * `provider-error:<type>`: the provider said inside its stream that the answer failed, with that
 * error type (`providerErrorReason` keeps the set bounded).
 */
export type CutReason = 'client' | 'upstream' | 'shutdown' | 'error' | `provider-error:${string}`;

/** `res.locals` key: the reason a gateway stage gave when it ended the response itself. */
const CUT_BY = 'cutBy';

/**
 * The error types and codes providers send inside a stream (Anthropic's error types; OpenAI's and
 * compatible servers' usual types and codes), named in the cut reason; any other is `other`, so a
 * provider cannot grow the metric's label values without bound.
 */
const KNOWN_ERROR_TYPES = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'rate_limit_error',
  'api_error',
  'overloaded_error',
  'timeout_error',
  'billing_error',
  'server_error',
  'rate_limit_exceeded',
  'insufficient_quota',
  'context_length_exceeded',
]);

/** The cut reason of an answer the provider failed inside its stream with error `type`. */
export function providerErrorReason(type: string | undefined): CutReason {
  const known = type?.toLowerCase();
  return `provider-error:${known !== undefined && KNOWN_ERROR_TYPES.has(known) ? known : 'other'}`;
}

/** Ends `res` before it is whole (its socket too), recording why. */
export function cutShort(res: Response, reason: CutReason): void {
  markCut(res, reason);
  res.destroy();
}

/**
 * Records that `res`, which goes on to end normally, carries an answer that is not whole (the
 * provider closed its stream early, or said in it that the answer failed): it is counted as cut.
 */
export function markCut(res: Response, reason: CutReason): void {
  (res.locals as Record<string, unknown>)[CUT_BY] = reason;
}

/**
 * Why `res` was cut, or undefined when it ended whole with a whole answer; `shuttingDown`: the
 * grace period is over.
 */
export function cutReason(res: Response, shuttingDown: boolean): CutReason | undefined {
  const given = (res.locals as Record<string, unknown>)[CUT_BY] as CutReason | undefined;
  if (res.writableFinished) return given;
  return given ?? (shuttingDown ? 'shutdown' : 'client');
}
