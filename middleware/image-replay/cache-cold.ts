/**
 * Whether the chat's prompt cache has gone cold, by the pruning gate's rule (SPEC section 4): its
 * cache clock is older than the TTL, or it has none. The TTL is the configured `pruning.ttl`, else
 * the one the request's own markers ask for; unlike pruning, a `ttl` of 0 (pruning off) does not
 * make every request cold: the markers' TTL (5 minutes by default) still says how long the
 * provider keeps the cache.
 */
import type { PruningConfig } from '../../config/config.ts';
import { DEFAULT_TTL_MS, EXTENDED_TTL_MS, pruningGate } from '../cache-ttl-pruning/index.ts';

export function cacheIsCold(
  cfg: Pick<PruningConfig, 'ttl'>,
  ttlHint: '5m' | '1h' | undefined,
  lastCacheTouchAt: number | undefined,
  now: number,
): boolean {
  const ttlMs =
    cfg.ttl !== undefined && cfg.ttl > 0 ? cfg.ttl : ttlHint === '1h' ? EXTENDED_TTL_MS : DEFAULT_TTL_MS;
  return pruningGate({ mode: 'cache-ttl', ttlMs, lastCacheTouchAt, now }).open;
}
