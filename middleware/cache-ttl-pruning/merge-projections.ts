import type { PruningProjectionEntry } from './projection-entry.ts';

/**
 * The cumulative projection after `next` ran on top of `prev`: one entry per call id, in first-seen
 * order. `cleared` supersedes `soft` (a cleared result is never un-cleared), and the digest kept is
 * the earliest one, the digest of the text before any pruning.
 */
export function mergeProjections(
  prev: readonly PruningProjectionEntry[],
  next: readonly PruningProjectionEntry[],
): PruningProjectionEntry[] {
  const merged = new Map<string, PruningProjectionEntry>();
  for (const entry of [...prev, ...next]) {
    const earlier = merged.get(entry.callId);
    if (!earlier) {
      merged.set(entry.callId, { callId: entry.callId, action: entry.action, digest: entry.digest });
      continue;
    }
    const action = earlier.action === 'cleared' || entry.action === 'cleared' ? 'cleared' : 'soft';
    merged.set(entry.callId, { callId: earlier.callId, action, digest: earlier.digest });
  }
  return [...merged.values()];
}
