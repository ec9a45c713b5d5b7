/**
 * The LLM pipeline, in order (SPEC section 3): replay the chat's recorded decisions, the image
 * replay clean-up, cache-TTL pruning (which replays its own sticky projection first), then trimming
 * at the compaction point. Each step edits the request as sent, in place, through the format's
 * request view; the repairs (image set-aside, overflow trimming) run later, in the repair loop.
 */
import type { CallContext, PipelineStep } from './call-context.ts';
import { cacheTtlPruningStep } from './cache-ttl-pruning/cache-ttl-pruning-step.ts';
import { imageReplayStep } from './image-replay/image-replay-step.ts';
import { replayDecisionsStep } from './steps/replay-decisions.ts';
import { compactionTrimStep } from './tool-result-trimming/compaction-trim-step.ts';

export const PIPELINE: readonly PipelineStep[] = [
  replayDecisionsStep,
  imageReplayStep,
  cacheTtlPruningStep,
  compactionTrimStep,
];

export async function runPipeline(
  ctx: CallContext,
  steps: readonly PipelineStep[] = PIPELINE,
): Promise<void> {
  for (const step of steps) await step.run(ctx);
}
