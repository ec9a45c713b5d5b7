/**
 * Why a response ended before it was whole, for the request metrics
 * (`oda_requests_cut_total{reason}`) and the request's log line. The code that ends a response
 * itself says why; a response that closed without a word was cut by the client going away, or by
 * the end of the shutdown grace period when that is what closed the remaining connections.
 */
import type { Response } from 'express';

/** Why a response ended before it was whole: a bounded set, one label value each. */
export type CutReason = 'client' | 'upstream' | 'shutdown' | 'error';

/** `res.locals` key: the reason a gateway stage gave when it ended the response itself. */
const CUT_BY = 'cutBy';

/** Ends `res` before it is whole (its socket too), recording why. */
export function cutShort(res: Response, reason: CutReason): void {
  (res.locals as Record<string, unknown>)[CUT_BY] = reason;
  res.destroy();
}

/** Why `res`, closed before it was whole, was cut; `shuttingDown`: the grace period is over. */
export function whyCut(res: Response, shuttingDown: boolean): CutReason {
  const given = (res.locals as Record<string, unknown>)[CUT_BY] as CutReason | undefined;
  return given ?? (shuttingDown ? 'shutdown' : 'client');
}
