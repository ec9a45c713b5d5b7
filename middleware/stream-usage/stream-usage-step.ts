import type { PipelineStep } from '../call-context.ts';

/**
 * Asks the provider for a streamed answer's usage where the client did not (SPEC section 11):
 * OpenAI sends a Chat Completions stream's usage only when the request sets
 * `stream_options.include_usage`, and most clients do not, so without the ask their calls would be
 * billed as answered with no tokens. The client still gets the stream it asked for: delivery takes
 * the usage-only chunk out of it (`effects.streamUsageAdded`) after the log and the accounting
 * have read it. A client that set `include_usage: false` is asked for too, and gets no usage
 * either: the gateway bills every answer. Not for a provider configured `streamUsage: off`, nor
 * one that refused the field.
 */
export const streamUsageStep: PipelineStep = {
  name: 'stream-usage',
  run(ctx) {
    if (!ctx.view.askStreamUsage) return;
    const provider = ctx.config.providers.find((p) => p.name === ctx.providerName);
    if (provider?.streamUsage === 'off' || ctx.streamUsageRefusals.refuses(ctx.providerName)) return;
    if (ctx.view.askStreamUsage()) ctx.effects.streamUsageAdded = true;
  },
};
