import type { CallContext, PipelineStep } from '../call-context.ts';
import { estimateTokens } from '../cache-ttl-pruning/index.ts';
import { trimToolResults, type TrimTrigger } from './index.ts';

/**
 * Trims oversized tool results in place and records each trim before the request goes out.
 * Returns how many results were trimmed. Recording failure fails the pass (and the request).
 */
export async function trimAndRecord(ctx: CallContext, trigger: TrimTrigger): Promise<number> {
  const decisions = trimToolResults(ctx.view, ctx.config.toolResultTrimming, trigger);
  if (decisions.length === 0) return 0;
  await ctx.record(
    decisions.map((d) => ({ type: 'tool-result-trimmed' as const, requestId: ctx.requestId, ...d })),
  );
  ctx.effects.trimmed += decisions.length;
  ctx.effects.trimmedChars += decisions.reduce((n, d) => n + d.originalChars - d.headChars - d.tailChars, 0);
  return decisions.length;
}

/**
 * The compaction point (SPEC section 3 step 4, section 5): when the request is over
 * `compaction.thresholdRatio` of a known context window, trim tool results, then measure again.
 * (The same estimate as pruning: characters / 4 over the messages.) Summarising older history,
 * which would follow a second measurement, is a later capability; until then the request goes as it is.
 */
export const compactionTrimStep: PipelineStep = {
  name: 'compaction-trim',
  async run(ctx) {
    if (ctx.contextWindow === undefined) return;
    const limit = ctx.config.compaction.thresholdRatio * ctx.contextWindow;
    if (estimateTokens(ctx.view) <= limit) return;
    await trimAndRecord(ctx, 'threshold');
  },
};
