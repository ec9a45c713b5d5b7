/**
 * Retry delays as the official SDKs compute them: `retry-after-ms`, then `retry-after` (seconds or
 * an HTTP date), else the initial delay doubling up to the maximum, less up to 25% jitter.
 */
export function retryDelayMs(
  attempt: number,
  headers: Record<string, string | string[] | undefined>,
  opts: { initialDelayMs: number; maxDelayMs: number; now: number; random: () => number },
): number {
  const h = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const ms = Number(h('retry-after-ms'));
  if (h('retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0 && ms < 60_000) return ms;
  const ra = h('retry-after');
  if (ra !== undefined) {
    const secs = Number(ra);
    if (Number.isFinite(secs) && secs >= 0 && secs < 60) return secs * 1000;
    const date = Date.parse(ra);
    if (Number.isFinite(date)) {
      const wait = date - opts.now;
      if (wait >= 0 && wait < 60_000) return wait;
    }
  }
  const base = Math.min(opts.initialDelayMs * 2 ** attempt, opts.maxDelayMs);
  return Math.round(base * (1 - 0.25 * opts.random()));
}
