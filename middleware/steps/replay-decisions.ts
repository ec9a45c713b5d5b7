import type { PipelineStep } from '../call-context.ts';
import { replaySetAside } from '../image-set-aside/index.ts';
import { replayTrims } from '../tool-result-trimming/index.ts';

/**
 * Replays the chat's recorded decisions (images set aside, tool results trimmed) so every request
 * of the chat carries the same bytes the model received before: the model never gets back an image
 * or text it was spared, and the provider's prompt-cache prefix stays stable.
 */
export const replayDecisionsStep: PipelineStep = {
  name: 'replay-decisions',
  run(ctx) {
    replaySetAside(ctx.view, ctx.decisions.setAside);
    replayTrims(ctx.view, ctx.decisions.trims);
  },
};
