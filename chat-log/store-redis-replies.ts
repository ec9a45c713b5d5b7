/**
 * How the Redis chat store (`store-redis.ts` and its parts) turns what Redis answers into results:
 * the 503 every unreachable or stalled Redis becomes, a MULTI's replies each checked for its own
 * error, and stored JSON that a listing skips rather than fails on when it does not parse.
 */
import { OdaError } from '../lib/errors.ts';

/**
 * The 503 of a write whose reply was lost: Redis may or may not have applied it, so a caller that
 * would try it again (an increment) must not, or it may count twice.
 */
export class OutcomeUnknown extends OdaError {}

/** True when `err` is a store failure after which the write may already have been applied. */
export function mayHaveBeenApplied(err: unknown): boolean {
  return err instanceof OutcomeUnknown;
}

/**
 * The 503 a call gets while Redis cannot answer it (unreachable, stalled, closed);
 * `outcomeUnknown`: its reply was lost, so it may have been applied.
 */
export function unavailable(detail: string, cause?: unknown, outcomeUnknown = false): OdaError {
  const Failure = outcomeUnknown ? OutcomeUnknown : OdaError;
  return new Failure('ODA_ERR_STORE_UNAVAILABLE', 503, `the chat store (Redis) is unavailable: ${detail}`, {
    cause,
    headers: { 'retry-after': '1' },
  });
}

/** Stored JSON, or undefined when it does not parse (a listing skips it rather than failing). */
export function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Results of a MULTI, each checked for its own error. */
export function results(replies: Array<[Error | null, unknown]> | null): unknown[] {
  if (!replies) throw unavailable('transaction aborted');
  return replies.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}
