import type { PipelineStep } from '../call-context.ts';
import { cacheIsCold, cleanBefore, replayWindow } from './index.ts';

/**
 * The image replay clean-up (SPEC sections 4 and 11): view-only and idempotent. Its kept window
 * moves only on a cold cache or once more than `chunkImages` images are behind it, else it stays
 * where the chat's last request had it (the window each request used is logged with its response,
 * so every request and replica replays it identically).
 */
export const imageReplayStep: PipelineStep = {
  name: 'image-replay',
  run(ctx) {
    const cfg = ctx.config.pruning.imageReplay;
    if (!cfg.enabled) return;
    const messages = ctx.view.messages();
    const images = ctx.view.images();
    // Most requests carry no image: then no lookup of roles is built.
    const roles = images.length > 0 ? new Map(messages.map((m) => [m.index, m.role])) : undefined;
    const window = replayWindow({
      messages,
      imageMessageIndexes: images
        .filter((image) => {
          const role = roles?.get(image.messageIndex);
          return role === 'user' || role === 'tool';
        })
        .map((image) => image.messageIndex),
      keepTurns: cfg.keepTurns,
      chunkImages: cfg.chunkImages,
      recordedFrom: ctx.decisions.imageReplayFrom,
      cold: cacheIsCold(ctx.config.pruning, ctx.view.cacheTtlHint(), ctx.lastCacheTouchAt, ctx.startedAt),
    });
    const r = cleanBefore(ctx.view, window.cutoff, { messages, images });
    ctx.effects.imageReplay = { imagesRemoved: r.imagesRemoved, referencesRemoved: r.referencesRemoved };
    ctx.effects.imageReplayFrom = window.from;
  },
};
