/** Prompt caching for clients that ask for none (SPEC section 11). */
export {
  BREAKPOINT_PLAN,
  MAX_BREAKPOINTS,
  MAX_CACHE_KEY_CHARS,
  applyPromptCaching,
  cacheKeyFor,
  promptCachingHeader,
  resolvePromptCachingSettings,
  type PromptCachingResult,
  type PromptCachingSettings,
} from './prompt-caching.ts';
export { CacheKeyRefusals } from './cache-key-refusals.ts';
export { promptCachingStep } from './prompt-caching-step.ts';
export { withdrawCacheKey } from './withdraw-cache-key.ts';
