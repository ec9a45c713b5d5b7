import type { PipelineStep } from '../call-context.ts';
import { imageReplayCleanup } from './index.ts';

/**
 * The image replay clean-up (SPEC section 4, last part): view-only and idempotent, independent of
 * the TTL, so it records nothing; the newest `keepTurns` completed turns stay byte for byte.
 */
export const imageReplayStep: PipelineStep = {
  name: 'image-replay',
  run(ctx) {
    const cfg = ctx.config.pruning.imageReplay;
    if (!cfg.enabled) return;
    const r = imageReplayCleanup(ctx.view, cfg.keepTurns);
    ctx.effects.imageReplay = { imagesRemoved: r.imagesRemoved, referencesRemoved: r.referencesRemoved };
  },
};
