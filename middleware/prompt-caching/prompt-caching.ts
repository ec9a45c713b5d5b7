/**
 * Prompt caching for clients that ask for none (SPEC section 11). Many clients (scripts, framework
 * defaults, most OpenAI-format code) mark no cache breakpoints, so every call of a long chat is
 * billed in full; the gateway knows the chat and can make its growing prefix cacheable:
 *
 * - Anthropic format, no `cache_control` anywhere: explicit breakpoints at the end of the last
 *   message, at the end of the previous turn (where the previous request ended, so a turn that adds
 *   more than Anthropic's 20-block lookback still reads the previous entry) and at the end of the
 *   system prompt (or the tools), or, for providers that accept it, Anthropic's request-level
 *   automatic caching (one top-level `cache_control`).
 *   https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching
 * - OpenAI format, no `prompt_cache_key`: the chat id as the key, so the provider routes the chat's
 *   requests to the same cache. https://platform.openai.com/docs/guides/prompt-caching
 *
 * Markers or keys the client set are never touched: a request that has any is left as it is.
 */
import type { BreakpointPlace, RequestView } from '../../providers/request-view.ts';
import { sha256Hex } from '../../lib/sha256.ts';
import { branchRoot } from '../../chat-log/chat-id.ts';

/** Anthropic accepts at most this many `cache_control` breakpoints in one request. */
export const MAX_BREAKPOINTS = 4;

/** Where the gateway's own breakpoints go, most useful first. */
export const BREAKPOINT_PLAN: readonly BreakpointPlace[] = ['last-message', 'previous-turn', 'system'];

/** OpenAI's `prompt_cache_key` holds at most this many characters. */
export const MAX_CACHE_KEY_CHARS = 64;

/** The settings that apply to one request (the provider's own over the gateway's). */
export interface PromptCachingSettings {
  readonly mode: 'auto' | 'off';
  /** Anthropic format: explicit breakpoints, or the request-level automatic caching. */
  readonly style: 'breakpoints' | 'automatic';
  /** OpenAI format: the provider accepts `prompt_cache_key`. */
  readonly cacheKey: boolean;
}

/** What prompt caching added to the request. */
export type PromptCachingResult =
  | { readonly kind: 'none' }
  | { readonly kind: 'automatic' }
  | { readonly kind: 'breakpoints'; readonly count: number }
  | { readonly kind: 'key'; readonly key: string };

/** The provider's settings over the gateway's mode. */
export function resolvePromptCachingSettings(
  gateway: { readonly mode: 'auto' | 'off' },
  provider:
    | {
        readonly mode?: 'auto' | 'off';
        readonly style: 'breakpoints' | 'automatic';
        readonly cacheKey: boolean;
      }
    | undefined,
): PromptCachingSettings {
  return {
    mode: provider?.mode ?? gateway.mode,
    style: provider?.style ?? 'breakpoints',
    cacheKey: provider?.cacheKey ?? true,
  };
}

/**
 * The `prompt_cache_key` for a chat: its id, or a digest of it when the id is too long for the
 * field. A branch (a regenerated answer, an edited or rewound history) shares its prefix with the
 * chat it branched from, so it gets that chat's key: the provider routes both to the same cache.
 */
export function cacheKeyFor(chatId: string): string {
  const id = branchRoot(chatId);
  if (id.length <= MAX_CACHE_KEY_CHARS) return id;
  return `oda:${sha256Hex(id).slice(0, MAX_CACHE_KEY_CHARS - 4)}`;
}

/**
 * Makes the request's prefix cacheable in place when it asks for no caching of its own; returns
 * what was added. `plan` lists the breakpoint places to try in order; at most MAX_BREAKPOINTS are set.
 */
export function applyPromptCaching(
  view: RequestView,
  settings: PromptCachingSettings,
  chatId: string,
  plan: readonly BreakpointPlace[] = BREAKPOINT_PLAN,
): PromptCachingResult {
  if (settings.mode !== 'auto') return { kind: 'none' };
  switch (view.promptCachingStyle) {
    case 'breakpoints': {
      if (view.hasCacheMarkers?.() !== false) return { kind: 'none' };
      if (settings.style === 'automatic') {
        return view.setAutomaticCaching?.() ? { kind: 'automatic' } : { kind: 'none' };
      }
      let count = 0;
      for (const place of plan) {
        if (count >= MAX_BREAKPOINTS) break;
        if (view.addCacheBreakpoint?.(place)) count++;
      }
      return count > 0 ? { kind: 'breakpoints', count } : { kind: 'none' };
    }
    case 'key': {
      if (!settings.cacheKey || view.promptCacheKey?.() !== undefined) return { kind: 'none' };
      const key = cacheKeyFor(chatId);
      return view.setPromptCacheKey?.(key) ? { kind: 'key', key } : { kind: 'none' };
    }
    default:
      return { kind: 'none' };
  }
}

/** The `x-oda-prompt-caching` header value for what was added; undefined when nothing was. */
export function promptCachingHeader(result: PromptCachingResult): string | undefined {
  switch (result.kind) {
    case 'automatic':
      return 'automatic';
    case 'breakpoints':
      return `breakpoints=${result.count}`;
    case 'key':
      return 'key';
    default:
      return undefined;
  }
}
