/**
 * The LLM pipeline, in order (SPEC sections 3 and 11): prompt caching for requests that ask for
 * none, the ask for a streamed answer's usage where the client made none, replay the chat's recorded decisions, the image replay clean-up, cache-TTL pruning (which
 * replays its own sticky projection first), then trimming at the compaction point. Each step edits
 * the request as sent, in place, through the format's request view; the repairs (image set-aside,
 * overflow trimming) run later, in the repair loop.
 *
 * Every edit is weighed and put on the mechanism that made it (ctx.effects.removed), for the
 * chat's and the team's accounts; the meter stays attached for the repair loop's edits.
 */
import type { CallContext, PipelineStep } from './call-context.ts';
import { RemovalMeter, type Mechanism } from './accounting/removal-meter.ts';
import { cacheTtlPruningStep } from './cache-ttl-pruning/cache-ttl-pruning-step.ts';
import { imageReplayStep } from './image-replay/image-replay-step.ts';
import { promptCachingStep } from './prompt-caching/prompt-caching-step.ts';
import { replayDecisionsStep } from './steps/replay-decisions.ts';
import { streamUsageStep } from './stream-usage/stream-usage-step.ts';
import { compactionTrimStep } from './tool-result-trimming/compaction-trim-step.ts';

export const PIPELINE: readonly PipelineStep[] = [
  promptCachingStep,
  streamUsageStep,
  replayDecisionsStep,
  imageReplayStep,
  cacheTtlPruningStep,
  compactionTrimStep,
];

/**
 * The mechanism whose removals a step's edits are; a step not listed (the replay of recorded
 * decisions) leaves it to the kind of edit: images set aside, texts trimmed.
 */
const MECHANISM_OF_STEP: Readonly<Record<string, Mechanism>> = {
  'image-replay': 'imageReplay',
  'cache-ttl-pruning': 'pruning',
  'compaction-trim': 'trimming',
};

export async function runPipeline(
  ctx: CallContext,
  steps: readonly PipelineStep[] = PIPELINE,
): Promise<void> {
  const meter = new RemovalMeter();
  if (meter.attach(ctx.view)) ctx.effects.removed = meter.removed;
  try {
    for (const [i, step] of steps.entries()) {
      if (i > 0 && ctx.nextTurn) await ctx.nextTurn();
      meter.mechanism = MECHANISM_OF_STEP[step.name];
      await step.run(ctx);
    }
  } finally {
    meter.mechanism = undefined;
  }
}
