/**
 * One cache-TTL pruning pass over a request (SPEC section 4), run once the gate is open:
 *
 * 1. Estimate the messages against the context window; under `softTrimRatio`, change nothing.
 * 2. Soft-trim every oversized prunable tool result, oldest first.
 * 3. If hard clear is enabled, the estimate is still at or over `hardClearRatio` and the prunable
 *    results hold at least `minPrunableToolChars` estimate characters, replace them with the
 *    placeholder, oldest first, stopping as soon as the estimate is under `hardClearRatio`.
 *
 * The pass runs on top of the projection already replayed on the view (`replayed`): those results
 * are not soft-trimmed again, cleared ones are skipped, and their recorded digests (of the original
 * text) are kept. Results are told apart by position, not by call id, since a server may hand the
 * same id out again. The result maps onto the chat log's `pruning` event.
 */
import type { RequestView } from '../../providers/request-view.ts';
import { clearToolResult, softTrimToolResult, toolResultChars } from './edit-tool-result.ts';
import { charsToTokens, estimateChars } from './estimate.ts';
import type { PruningSettings } from './gate.ts';
import { mergeProjections, unplaced, type PlacedProjectionEntry } from './merge-projections.ts';
import { placedPrunableToolResults, type PlacedToolResult } from './prunable-range.ts';
import type { PruningAction, PruningProjectionEntry } from './projection-entry.ts';
import { toolResultDigest } from './tool-result-digest.ts';

export interface PrunePassResult {
  /** The cumulative projection to record: the replayed entries merged with this pass's. */
  readonly projection: PruningProjectionEntry[];
  /** Results this pass soft-trimmed (and did not clear afterwards). */
  readonly soft: number;
  /** Results this pass cleared. */
  readonly cleared: number;
  /** Estimate characters this pass removed (CJK weighted, 8000 per image). */
  readonly charsRemoved: number;
  /** Estimated tokens of the messages before and after this pass. */
  readonly estimateBefore: number;
  readonly estimateAfter: number;
  /** True when the pass changed what the model receives (the cache clock moves only then). */
  readonly changed: boolean;
}

function ratio(chars: number, contextWindowTokens: number): number {
  return charsToTokens(chars) / contextWindowTokens;
}

/**
 * Runs one pruning pass over `view` in place. `contextWindowTokens` undefined or not positive (an
 * unknown window) means nothing is measured and nothing changes. `replayed` are the entries
 * `applyProjection` applied to this view.
 */
export function prunePass(
  view: RequestView,
  settings: PruningSettings,
  contextWindowTokens: number | undefined,
  replayed: readonly PlacedProjectionEntry[] = [],
): PrunePassResult {
  const charsBefore = estimateChars(view);
  const estimateBefore = charsToTokens(charsBefore);
  const unchanged: PrunePassResult = {
    projection: unplaced(mergeProjections(replayed, [])),
    soft: 0,
    cleared: 0,
    charsRemoved: 0,
    estimateBefore,
    estimateAfter: estimateBefore,
    changed: false,
  };
  const window = contextWindowTokens;
  if (window === undefined || !Number.isFinite(window) || window <= 0) return unchanged;
  if (ratio(charsBefore, window) < settings.softTrimRatio) return unchanged;

  const previous = new Map(replayed.map((entry) => [entry.resultIndex, entry]));
  // By position in `view.toolResults()`: the call id and original digest of each result touched.
  const named = new Map<number, { callId: string; digest: string }>();
  const actions = new Map<number, PruningAction>();
  let chars = charsBefore;
  const name = ({ ref, index }: PlacedToolResult) => {
    if (!named.has(index))
      named.set(index, { callId: ref.callId, digest: previous.get(index)?.digest ?? toolResultDigest(ref) });
  };

  for (const placed of placedPrunableToolResults(view, settings)) {
    if (previous.has(placed.index)) continue;
    name(placed);
    const edit = softTrimToolResult(placed.ref, settings.softTrim);
    if (!edit) continue;
    chars += edit.charsAfter - edit.charsBefore;
    actions.set(placed.index, 'soft');
  }

  if (settings.hardClear.enabled && ratio(chars, window) >= settings.hardClearRatio) {
    // Fresh refs: images a soft trim replaced are text parts now.
    const candidates = placedPrunableToolResults(view, settings).filter(
      ({ index }) => previous.get(index)?.action !== 'cleared',
    );
    const prunableChars = candidates.reduce((sum, { ref }) => sum + toolResultChars(ref), 0);
    if (prunableChars >= settings.minPrunableToolChars) {
      for (const placed of candidates) {
        if (ratio(chars, window) < settings.hardClearRatio) break;
        name(placed);
        const edit = clearToolResult(placed.ref, settings.hardClear.placeholder);
        if (!edit) continue;
        chars += edit.charsAfter - edit.charsBefore;
        actions.set(placed.index, 'cleared');
      }
    }
  }

  if (actions.size === 0) return unchanged;
  const entries: PlacedProjectionEntry[] = [];
  let soft = 0;
  let cleared = 0;
  // In message order.
  for (const [resultIndex, action] of [...actions].sort((a, b) => a[0] - b[0])) {
    const { callId, digest } = named.get(resultIndex)!;
    if (action === 'soft') soft += 1;
    else cleared += 1;
    entries.push({ callId, action, digest, resultIndex });
  }
  const charsAfter = estimateChars(view);
  return {
    projection: unplaced(mergeProjections(replayed, entries)),
    soft,
    cleared,
    charsRemoved: Math.max(0, charsBefore - charsAfter),
    estimateBefore,
    estimateAfter: charsToTokens(charsAfter),
    changed: true,
  };
}
