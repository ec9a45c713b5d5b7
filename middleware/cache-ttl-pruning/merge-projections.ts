import type { PruningProjectionEntry } from './projection-entry.ts';

/**
 * A projection entry together with the position, in `view.toolResults()`, of the tool result it
 * changed in this request. Call ids alone do not name a result: some servers hand the same id out
 * again.
 */
export interface PlacedProjectionEntry extends PruningProjectionEntry {
  readonly resultIndex: number;
}

/**
 * The cumulative projection after `next` ran on top of `prev`: one entry per tool result, in
 * first-seen order. `cleared` supersedes `soft` (a cleared result is never un-cleared), and the
 * digest kept is the earliest one, the digest of the text before any pruning.
 */
export function mergeProjections(
  prev: readonly PlacedProjectionEntry[],
  next: readonly PlacedProjectionEntry[],
): PlacedProjectionEntry[] {
  const merged = new Map<number, PlacedProjectionEntry>();
  for (const entry of [...prev, ...next]) {
    const earlier = merged.get(entry.resultIndex);
    if (!earlier) {
      const { callId, action, digest, resultIndex } = entry;
      merged.set(resultIndex, { callId, action, digest, resultIndex });
      continue;
    }
    const action = earlier.action === 'cleared' || entry.action === 'cleared' ? 'cleared' : 'soft';
    merged.set(entry.resultIndex, { ...earlier, action });
  }
  return [...merged.values()];
}

/** The entries as the chat log records them, without the positions of this request. */
export function unplaced(entries: readonly PlacedProjectionEntry[]): PruningProjectionEntry[] {
  return entries.map(({ callId, action, digest }) => ({ callId, action, digest }));
}
