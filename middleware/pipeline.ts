/**
 * The LLM pipeline, in order (SPEC section 3): replay the chat's recorded decisions, the image
 * replay clean-up, cache-TTL pruning, then trimming at the compaction point. Each step edits the
 * request as sent, in place, through the format's request view.
 */
import type { CallContext, PipelineStep } from './call-context.ts';
import { replayDecisionsStep } from './steps/replay-decisions.ts';
import { compactionTrimStep } from './tool-result-trimming/compaction-trim-step.ts';

export const PIPELINE: readonly PipelineStep[] = [replayDecisionsStep, compactionTrimStep];

export async function runPipeline(ctx: CallContext, steps: readonly PipelineStep[] = PIPELINE): Promise<void> {
  for (const step of steps) await step.run(ctx);
}
