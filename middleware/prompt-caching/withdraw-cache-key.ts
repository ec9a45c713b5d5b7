import type { CallContext } from '../call-context.ts';

/**
 * The repair for a provider that refused `prompt_cache_key`: takes the key the gateway added out of
 * the request, in place (everything else stays as sent), drops `key` from what prompt caching
 * reports, and remembers that the provider refuses the field, so later requests to it go without.
 * False when the gateway added no key (the client's own key is its own business: that refusal goes
 * back to the client as it was).
 */
export function withdrawCacheKey(ctx: CallContext): boolean {
  if (!ctx.view.removeAddedPromptCacheKey?.()) return false;
  delete ctx.effects.promptCaching;
  ctx.cacheKeyRefusals.remember(ctx.providerName);
  return true;
}
