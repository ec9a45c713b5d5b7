/**
 * When cache-TTL pruning may run, and with which settings (SPEC section 4).
 *
 * Pruning rewrites the prompt prefix, so it only runs once the provider's prompt cache has
 * expired: the chat's cache clock must be strictly older than `ttl`. At exactly `ttl` the cache
 * is treated as still warm (providers keep an entry for at least its TTL, so pruning at the
 * boundary could throw away a cache that would still have been read).
 */
import type { PruningConfig } from '../../config/config.ts';

export type PruningMode = 'off' | 'cache-ttl';

/** Five minutes: the provider's default prompt-cache lifetime and the manual-configuration default. */
export const DEFAULT_TTL_MS = 5 * 60_000;
/** One hour: the extended prompt-cache lifetime a request can ask for. */
export const EXTENDED_TTL_MS = 60 * 60_000;

/** Everything the pure pruning functions need, resolved for one request. */
export interface PruningSettings {
  readonly mode: PruningMode;
  /** Cache lifetime in milliseconds; 0 disables pruning. */
  readonly ttlMs: number;
  readonly keepLastAssistants: number;
  readonly softTrimRatio: number;
  readonly hardClearRatio: number;
  readonly minPrunableToolChars: number;
  readonly softTrim: { readonly maxChars: number; readonly headChars: number; readonly tailChars: number };
  readonly hardClear: { readonly enabled: boolean; readonly placeholder: string };
  readonly tools: { readonly allow: readonly string[]; readonly deny: readonly string[] };
}

export interface PruningGateInput {
  readonly mode: PruningMode;
  readonly ttlMs: number;
  /** When a call last read or wrote the chat's prompt cache; undefined when it never did. */
  readonly lastCacheTouchAt: number | undefined;
  readonly now: number;
}

export type PruningGateReason = 'off' | 'ttl-disabled' | 'no-clock' | 'expired' | 'warm';

export interface PruningGateResult {
  /** True when a pruning pass may run now. */
  readonly open: boolean;
  readonly reason: PruningGateReason;
}

/**
 * Decides whether a pruning pass may run: mode `cache-ttl`, `ttl > 0`, and either no cache clock
 * (no warm cache; a non-finite clock counts as none) or `now - lastCacheTouchAt > ttlMs`.
 */
export function pruningGate(input: PruningGateInput): PruningGateResult {
  if (input.mode !== 'cache-ttl') return { open: false, reason: 'off' };
  if (!(input.ttlMs > 0)) return { open: false, reason: 'ttl-disabled' };
  const touched = input.lastCacheTouchAt;
  if (touched === undefined || !Number.isFinite(touched)) return { open: true, reason: 'no-clock' };
  return input.now - touched > input.ttlMs
    ? { open: true, reason: 'expired' }
    : { open: false, reason: 'warm' };
}

/** True when a per-request override header asks to turn pruning off (`off`, any case). */
export function isPruningOffOverride(value: string | undefined): boolean {
  return value !== undefined && value.trim().toLowerCase() === 'off';
}

/**
 * Resolves the settings for one request. An explicit `mode` wins; with `mode` unset, a format
 * whose providers default to cache-TTL pruning (the caller passes true for Anthropic-format
 * providers) gets `cache-ttl`, any other `off`. An explicit `ttl` wins; otherwise the request's own
 * cache markers choose it: `1h` when any asks for one hour, else `5m`. A `ttl` of 0, or the
 * override header value `off`, turns pruning off for the request.
 */
export function resolvePruningSettings(
  cfg: PruningConfig,
  formatDefaultsToCacheTtl: boolean,
  ttlHint: '5m' | '1h' | undefined,
  overrideHeader?: string,
): PruningSettings {
  const ttlMs = cfg.ttl ?? (ttlHint === '1h' ? EXTENDED_TTL_MS : DEFAULT_TTL_MS);
  let mode: PruningMode = cfg.mode ?? (formatDefaultsToCacheTtl ? 'cache-ttl' : 'off');
  if (ttlMs <= 0 || isPruningOffOverride(overrideHeader)) mode = 'off';
  return {
    mode,
    ttlMs,
    keepLastAssistants: cfg.keepLastAssistants,
    softTrimRatio: cfg.softTrimRatio,
    hardClearRatio: cfg.hardClearRatio,
    minPrunableToolChars: cfg.minPrunableToolChars,
    softTrim: {
      maxChars: cfg.softTrim.maxChars,
      headChars: cfg.softTrim.headChars,
      tailChars: cfg.softTrim.tailChars,
    },
    hardClear: { enabled: cfg.hardClear.enabled, placeholder: cfg.hardClear.placeholder },
    tools: { allow: [...cfg.tools.allow], deny: [...cfg.tools.deny] },
  };
}
