/**
 * Replays a recorded pruning projection (SPEC section 4: projections are sticky), so every later
 * request of the chat carries exactly the bytes the pruning pass produced until the next pass: a
 * `soft` entry re-runs the same deterministic soft trim, a `cleared` entry puts the placeholder
 * back. An entry applies only to a result with the same call id whose text still has the recorded
 * digest; anything else is left alone. A call id may name several results (some servers hand ids
 * out again), so an entry is found by its digest among them, and entries naming the same call id
 * and text go to those results oldest first, one each. Replaying twice changes nothing the second
 * time, because a pruned text no longer has its original digest.
 *
 * The bytes match only when the replay sees the same input the pass saw, so it must run at the
 * pass's place in the pipeline (after the mechanisms that run before pruning), and with the same
 * `softTrim` and `hardClear` settings.
 */
import type { RequestView } from '../../providers/request-view.ts';
import { clearToolResult, softTrimToolResult } from './edit-tool-result.ts';
import type { PruningSettings } from './gate.ts';
import type { PlacedProjectionEntry } from './merge-projections.ts';
import type { PruningProjectionEntry } from './projection-entry.ts';
import { toolResultDigest } from './tool-result-digest.ts';

export type ReplaySettings = Pick<PruningSettings, 'softTrim' | 'hardClear'>;

/**
 * Applies `projection` to `view` in place and returns the entries that applied, each with the
 * position of its result; pass those to `prunePass` so a new pass knows which results are already
 * pruned and keeps their digests.
 */
export function applyProjection(
  view: RequestView,
  projection: readonly PruningProjectionEntry[],
  settings: ReplaySettings,
): PlacedProjectionEntry[] {
  if (projection.length === 0) return [];
  const pending = new Map<string, PruningProjectionEntry[]>();
  for (const entry of projection) {
    const list = pending.get(entry.callId);
    if (list) list.push(entry);
    else pending.set(entry.callId, [entry]);
  }
  const applied: PlacedProjectionEntry[] = [];
  view.toolResults().forEach((ref, resultIndex) => {
    const entries = pending.get(ref.callId);
    if (!entries || entries.length === 0) return;
    const digest = toolResultDigest(ref);
    const found = entries.findIndex((entry) => entry.digest === digest);
    if (found < 0) return;
    const entry = entries.splice(found, 1)[0]!;
    const edit =
      entry.action === 'soft'
        ? softTrimToolResult(ref, settings.softTrim)
        : clearToolResult(ref, settings.hardClear.placeholder);
    if (edit) applied.push({ callId: entry.callId, action: entry.action, digest: entry.digest, resultIndex });
  });
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
