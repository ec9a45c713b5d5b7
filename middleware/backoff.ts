/**
 * Retry delays as the official SDKs compute them: the delay the provider asks for
 * (`retry-after-ms`, then `retry-after` in seconds or as an HTTP date), else the initial delay
 * doubling up to the maximum, less up to 25% jitter. Unlike the SDKs, the gateway does not turn a
 * long asked delay into its own short backoff: the repair loop gives up instead (SPEC section 3).
 */

function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The delay the provider asks for before a retry, of any length, in ms; undefined when it asks for
 * none (no header, a value that is not a delay, an HTTP date already past).
 */
export function askedDelayMs(
  headers: Record<string, string | string[] | undefined>,
  now: number,
): number | undefined {
  const msText = headerValue(headers, 'retry-after-ms');
  if (msText !== undefined) {
    const ms = Number(msText);
    if (Number.isFinite(ms) && ms >= 0) return ms;
  }
  const ra = headerValue(headers, 'retry-after');
  if (ra === undefined) return undefined;
  const secs = Number(ra);
  if (Number.isFinite(secs) && secs >= 0) return secs * 1000;
  const date = Date.parse(ra);
  if (Number.isFinite(date) && date - now >= 0) return date - now;
  return undefined;
}

/** The gateway's own backoff before retry number `attempt + 1`: doubling, capped, with jitter. */
export function backoffDelayMs(
  attempt: number,
  opts: { initialDelayMs: number; maxDelayMs: number; random: () => number },
): number {
  const base = Math.min(opts.initialDelayMs * 2 ** attempt, opts.maxDelayMs);
  return Math.round(base * (1 - 0.25 * opts.random()));
}
