/**
 * The repairs of the repair loop, as hooks over the call context: image set-aside, overflow
 * trimming, and taking out a prompt-cache key or a stream-usage ask the provider refuses. They
 * change what the request carries instead of repeating the call, so they spend no transport retry;
 * each returns false when nothing is left to repair, which ends the loop with the provider's
 * refusal.
 */
import type { CallContext } from './call-context.ts';
import type { RepairHooks } from './repair-loop.ts';
import { chooseImagesToSetAside, setAsideImages } from './image-set-aside/index.ts';
import { withdrawCacheKey } from './prompt-caching/withdraw-cache-key.ts';
import { withdrawStreamUsage } from './stream-usage/withdraw-stream-usage.ts';
import { trimAndRecord } from './tool-result-trimming/compaction-trim-step.ts';

export function buildRepairs(ctx: CallContext): RepairHooks {
  let imageRound = 0;
  // Repair rounds of this call, every kind; at most repairs.maxRounds (SPEC section 14).
  let rounds = 0;
  const maxRounds = ctx.config.repairs.maxRounds;
  // Images the previous image round took out; a refusal that names no count takes twice as many.
  let lastRemoved = 0;
  return {
    async imageLimit(refusal) {
      if (rounds >= maxRounds) return false;
      const before = ctx.view.images().length;
      const chosen = chooseImagesToSetAside(ctx.view, refusal, lastRemoved * 2);
      if (chosen.length === 0) return false;
      const decisions = setAsideImages(ctx.view, chosen, ctx.imageOrdinals, (image, key) =>
        ctx.describeImage(image, key),
      );
      if (decisions.length === 0) return false;
      rounds++;
      lastRemoved = before - ctx.view.images().length;
      imageRound++;
      await ctx.record(
        decisions.map((d) => ({
          type: 'image-set-aside' as const,
          requestId: ctx.requestId,
          round: imageRound,
          ...d,
        })),
      );
      ctx.effects.imagesSetAside += decisions.length;
      ctx.effects.imageRounds++;
      return true;
    },
    async contextOverflow() {
      if (rounds >= maxRounds) return false;
      const changed = (await trimAndRecord(ctx, 'overflow')) > 0;
      if (changed) rounds++;
      return changed;
    },
    // Neither take-back is a round of repairs.maxRounds: the gateway takes back an ask of its own
    // (a key or a stream-usage ask it added), at most once a call each, and a client must never
    // get a refusal of what it did not send for want of a round.
    async cacheKeyRefused() {
      return withdrawCacheKey(ctx);
    },
    async streamOptionsRefused() {
      return withdrawStreamUsage(ctx);
    },
  };
}
