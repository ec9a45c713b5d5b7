/**
 * Replays recorded tool-result trims so every later request of the chat carries the shortened
 * form byte-identically (SPEC section 5: the model never receives a second copy of the removed
 * text). A decision applies only to the same text, found by digest within the tool result with its
 * call id, never by position alone: between requests an image of the result may become a text part
 * (set aside, or cleaned up by the image replay clean-up, which runs after replay), which moves
 * the index of every text part after it.
 *
 * A decision with `parts` (a text spread over several text parts) applies to the result's text
 * parts that hold those digests, in order, wherever they sit; one without (a text of one part, and
 * every decision logged before results were trimmed as one text) applies to the text part that
 * holds its digest, the recorded part first.
 */
import type { TextSlot, ToolResultRef, RequestView } from '../../providers/request-view.ts';
import { keepHeadAndTail } from './cut-middle.ts';
import { cutParts } from './cut-parts.ts';
import { sha256Hex } from '../../lib/sha256.ts';

/** What replay reads of a recorded `tool-result-trimmed` decision. */
export interface RecordedTrim {
  readonly callId: string;
  readonly part: number;
  readonly originalChars: number;
  readonly headChars: number;
  readonly tailChars: number;
  readonly digest: string;
  readonly parts?: ReadonlyArray<{ readonly chars: number; readonly digest: string }> | undefined;
}

/**
 * Told of each decision replay applied, with the indexes of the text parts it changed and the
 * position of their tool result in `view.toolResults()` (results may share a call id).
 */
export type OnTrimReplayed<T extends RecordedTrim> = (
  decision: T,
  textIndexes: number[],
  resultIndex: number,
) => void;

/** True when `text` is the recorded text: at least `chars` code units (a cheap filter), then the digest. */
function holds(text: string, chars: number, digest: string): boolean {
  return text.length >= chars && sha256Hex(text) === digest;
}

/** The index of the text part holding a one-part decision's text: the recorded part first. */
function findText(texts: readonly TextSlot[], decision: RecordedTrim): number | undefined {
  const { part, originalChars, digest } = decision;
  const recorded = texts[part];
  if (recorded && holds(recorded.text, originalChars, digest)) return part;
  const found = texts.findIndex((slot, i) => i !== part && holds(slot.text, originalChars, digest));
  return found >= 0 ? found : undefined;
}

/** The indexes of the text parts holding each recorded part, in order, or undefined. */
function findParts(
  texts: readonly TextSlot[],
  parts: NonNullable<RecordedTrim['parts']>,
): number[] | undefined {
  const found: number[] = [];
  for (let i = 0; i < texts.length && found.length < parts.length; i++) {
    const want = parts[found.length]!;
    if (holds(texts[i]!.text, want.chars, want.digest)) found.push(i);
  }
  return found.length === parts.length ? found : undefined;
}

/** Applies one decision to `result` in place; the indexes of the text parts it changed, or undefined. */
function replayOne(result: ToolResultRef, decision: RecordedTrim): number[] | undefined {
  const { texts } = result;
  if (decision.parts && decision.parts.length > 0) {
    const found = findParts(texts, decision.parts);
    if (!found) return undefined;
    const before = found.map((i) => texts[i]!.text);
    const counts = decision.parts.map((p) => p.chars);
    const after = cutParts(before, counts, decision.headChars, decision.tailChars);
    found.forEach((i, k) => texts[i]!.set(after[k] ?? ''));
    return found.filter((_, k) => after[k] !== before[k]);
  }
  const index = findText(texts, decision);
  if (index === undefined) return undefined;
  const slot = texts[index]!;
  slot.set(keepHeadAndTail(slot.text, decision.headChars, decision.tailChars));
  return [index];
}

/** Applies `decisions` (in recorded order) to `view` in place; returns how many applied. */
export function replayTrims<T extends RecordedTrim>(
  view: RequestView,
  decisions: readonly T[],
  onReplayed?: OnTrimReplayed<T>,
): number {
  if (decisions.length === 0) return 0;
  const byCall = new Map<string, T[]>();
  for (const decision of decisions) {
    const list = byCall.get(decision.callId);
    if (list) list.push(decision);
    else byCall.set(decision.callId, [decision]);
  }
  let applied = 0;
  for (const [resultIndex, result] of view.toolResults().entries()) {
    const recorded = byCall.get(result.callId);
    if (!recorded) continue;
    // In recorded order, re-reading the parts each time: a text trimmed again under tighter
    // limits later replays as the same chain of cuts.
    for (const decision of recorded) {
      const changed = replayOne(result, decision);
      if (!changed) continue;
      applied += 1;
      onReplayed?.(decision, changed, resultIndex);
    }
  }
  return applied;
}
