import type { PipelineStep } from '../call-context.ts';
import { applyPromptCaching, promptCachingHeader, resolvePromptCachingSettings } from './prompt-caching.ts';

/**
 * Prompt caching for requests that ask for none (SPEC section 11), with the provider's settings
 * over the gateway's. Nothing is recorded: the markers or key it adds follow from the request and
 * the chat id, so every request of the chat gets the same ones. A provider that refused the key
 * gets none, as if configured with `cacheKey: false`.
 */
export const promptCachingStep: PipelineStep = {
  name: 'prompt-caching',
  run(ctx) {
    const provider = ctx.config.providers.find((p) => p.name === ctx.providerName);
    const configured = resolvePromptCachingSettings(ctx.config.promptCaching, provider?.promptCaching);
    const settings = ctx.cacheKeyRefusals.refuses(ctx.providerName)
      ? { ...configured, cacheKey: false }
      : configured;
    const header = promptCachingHeader(applyPromptCaching(ctx.view, settings, ctx.chatId));
    if (header) ctx.effects.promptCaching = header;
  },
};
