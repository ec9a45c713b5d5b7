/**
 * Replays a recorded pruning projection (SPEC section 4: projections are sticky), so every later
 * request of the chat carries exactly the bytes the pruning pass produced until the next pass: a
 * `soft` entry re-runs the same deterministic soft trim, a `cleared` entry puts the placeholder
 * back. An entry applies only to a result with the same call id whose text still has the recorded
 * digest; anything else is left alone. Replaying twice changes nothing the second time, because a
 * pruned text no longer has its original digest.
 *
 * The bytes match only when the replay sees the same input the pass saw, so it must run at the
 * pass's place in the pipeline (after the mechanisms that run before pruning), and with the same
 * `softTrim` and `hardClear` settings.
 */
import type { RequestView } from '../../providers/request-view.ts';
import { clearToolResult, softTrimToolResult } from './edit-tool-result.ts';
import type { PruningSettings } from './gate.ts';
import { mergeProjections } from './merge-projections.ts';
import type { PruningProjectionEntry } from './projection-entry.ts';
import { toolResultDigest } from './tool-result-digest.ts';

export type ReplaySettings = Pick<PruningSettings, 'softTrim' | 'hardClear'>;

/**
 * Applies `projection` to `view` in place and returns the entries that applied; pass those to
 * `prunePass` so a new pass knows which results are already pruned and keeps their digests.
 */
export function applyProjection(
  view: RequestView,
  projection: readonly PruningProjectionEntry[],
  settings: ReplaySettings,
): PruningProjectionEntry[] {
  if (projection.length === 0) return [];
  const byCall = new Map(mergeProjections([], projection).map((entry) => [entry.callId, entry]));
  const results = view.toolResults();
  const uses = new Map<string, number>();
  for (const ref of results) uses.set(ref.callId, (uses.get(ref.callId) ?? 0) + 1);
  const applied: PruningProjectionEntry[] = [];
  for (const ref of results) {
    const entry = byCall.get(ref.callId);
    if (!entry || uses.get(ref.callId) !== 1) continue;
    if (toolResultDigest(ref) !== entry.digest) continue;
    const edit =
      entry.action === 'soft'
        ? softTrimToolResult(ref, settings.softTrim)
        : clearToolResult(ref, settings.hardClear.placeholder);
    if (edit) applied.push(entry);
  }
  return applied;
}

/** Applies a recorded projection to `view` in place; returns how many tool results it changed. */
export function replayProjection(
  view: RequestView,
  projection: readonly PruningProjectionEntry[],
  settings: ReplaySettings,
): number {
  return applyProjection(view, projection, settings).length;
}
