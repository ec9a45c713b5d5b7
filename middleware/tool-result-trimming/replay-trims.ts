/**
 * Replays recorded tool-result trims so every later request of the chat carries the shortened
 * form byte-identically (SPEC section 5: the model never receives a second copy of the removed
 * text). A decision applies only to the same text: same call id, same part, same digest.
 */
import type { RequestView } from '../../providers/request-view.ts';
import { keepHeadAndTail } from './cut-middle.ts';
import { sha256Hex } from '../../lib/sha256.ts';
import type { TrimDecision } from './trim-tool-results.ts';

type RecordedTrim = Pick<
  TrimDecision,
  'callId' | 'part' | 'originalChars' | 'headChars' | 'tailChars' | 'digest'
>;

/** Applies `decisions` (in recorded order) to `view` in place; returns how many applied. */
export function replayTrims(view: RequestView, decisions: readonly RecordedTrim[]): number {
  if (decisions.length === 0) return 0;
  const byCall = new Map<string, RecordedTrim[]>();
  for (const decision of decisions) {
    const list = byCall.get(decision.callId);
    if (list) list.push(decision);
    else byCall.set(decision.callId, [decision]);
  }
  let applied = 0;
  for (const result of view.toolResults()) {
    const recorded = byCall.get(result.callId);
    if (!recorded) continue;
    // In recorded order, re-reading the slot each time: a text trimmed again under tighter
    // limits later replays as the same chain of cuts.
    for (const decision of recorded) {
      const slot = result.texts[decision.part];
      if (!slot) continue;
      const text = slot.text;
      // Cheap filter before hashing: the original had originalChars code points, so at least as
      // many code units.
      if (text.length < decision.originalChars) continue;
      if (sha256Hex(text) !== decision.digest) continue;
      slot.set(keepHeadAndTail(text, decision.headChars, decision.tailChars));
      applied += 1;
    }
  }
  return applied;
}
