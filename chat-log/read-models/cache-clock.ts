/**
 * Public read model: the chat's prompt-cache clock (seed 001). A model call the provider answered
 * (2xx) touches the cache at the request's start; a pruning pass that changed what the model receives resets it.
 */
import { z } from 'zod';
import type { ReadModel } from './read-model.ts';

const int = z.number().int().nonnegative();

const lastPruning = z.strictObject({
  at: int,
  soft: int,
  cleared: int,
  charsRemoved: int,
  estimateBefore: int,
  estimateAfter: int,
  changed: z.boolean(),
});
const cacheClockState = z.strictObject({
  /** Latest cache touch (ms); null until the first successful call or changing pass. */
  lastCacheTouchAt: int.nullable(),
  lastPruning: lastPruning.nullable(),
});
export type CacheClockState = z.infer<typeof cacheClockState>;

const later = (a: number | null, b: number): number => (a === null ? b : Math.max(a, b));

export const cacheClockModel: ReadModel<CacheClockState> = {
  name: 'cache-clock',
  version: 2,
  internal: false,
  schema: cacheClockState,
  initial: () => ({ lastCacheTouchAt: null, lastPruning: null }),
  apply(state, e) {
    if (e.type === 'response') {
      // Any 2xx means the provider read the prompt (and wrote its cache), even when the answer
      // was then cut or the client left before its end.
      const answered = e.ok || (e.status >= 200 && e.status < 300);
      return answered ? { ...state, lastCacheTouchAt: later(state.lastCacheTouchAt, e.startedAt) } : state;
    }
    if (e.type === 'pruning') {
      const { soft, cleared, charsRemoved, estimateBefore, estimateAfter, changed } = e;
      return {
        lastCacheTouchAt: changed ? later(state.lastCacheTouchAt, e.at) : state.lastCacheTouchAt,
        lastPruning: { at: e.at, soft, cleared, charsRemoved, estimateBefore, estimateAfter, changed },
      };
    }
    return state;
  },
};
