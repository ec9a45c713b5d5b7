/**
 * The two edits pruning makes to one tool result, in place through the request view: the soft
 * trim and the hard clear. Both replace the result's images by a short text, and both report the
 * result's estimate characters before and after so a pass can track its estimate without
 * measuring the whole request again.
 */
import type { ToolResultRef } from '../../providers/request-view.ts';
import { IMAGE_CHARS, weightedChars } from './estimate.ts';
import { REMOVED_PART_TEXT, softTrimParts, type SoftTrimLimits } from './soft-trim.ts';

/** What an image inside a trimmed or cleared tool result becomes. */
export const IMAGE_PRUNED_TEXT = '[image removed during context pruning]';

export interface ToolResultEdit {
  /** Estimate characters of the result before the edit. */
  readonly charsBefore: number;
  /** Estimate characters of the result after the edit. */
  readonly charsAfter: number;
}

/** Estimate characters of one tool result: its text (CJK weighted) and 8000 per image. */
export function toolResultChars(ref: ToolResultRef): number {
  let chars = ref.images.length * IMAGE_CHARS;
  for (const slot of ref.texts) chars += weightedChars(slot.text);
  return chars;
}

/** Soft-trims the result in place; undefined (and nothing changed) when it stays as it is. */
export function softTrimToolResult(ref: ToolResultRef, limits: SoftTrimLimits): ToolResultEdit | undefined {
  const trimmed = softTrimParts(
    ref.texts.map((slot) => slot.text),
    limits,
  );
  if (!trimmed) return undefined;
  const charsBefore = toolResultChars(ref);
  ref.texts.forEach((slot, i) => slot.set(trimmed[i] ?? ''));
  for (const image of ref.images) image.replaceWithText(IMAGE_PRUNED_TEXT);
  let charsAfter = ref.images.length * weightedChars(IMAGE_PRUNED_TEXT);
  for (const text of trimmed) charsAfter += weightedChars(text);
  return { charsBefore, charsAfter };
}

/**
 * Replaces the result's content by `placeholder` in place: the first text part holds it and the
 * other text parts `REMOVED_PART_TEXT` (never nothing: a provider may refuse an empty text block);
 * images become `IMAGE_PRUNED_TEXT`. A text part that already is
 * `IMAGE_PRUNED_TEXT` (an image a soft trim replaced) stays, so clearing a soft-trimmed result
 * gives the same bytes as clearing the original. A result without text parts puts the
 * placeholder in its first image's place. Undefined (and nothing changed) when the result has no
 * content or clearing would not make it smaller.
 */
export function clearToolResult(ref: ToolResultRef, placeholder: string): ToolResultEdit | undefined {
  const slots = ref.texts.filter((slot) => slot.text !== IMAGE_PRUNED_TEXT);
  const keptMarkers = ref.texts.length - slots.length;
  if (slots.length === 0 && ref.images.length === 0) return undefined;
  const marker = weightedChars(IMAGE_PRUNED_TEXT);
  const imagesToMarkers = slots.length > 0 ? ref.images.length : ref.images.length - 1;
  const charsBefore = toolResultChars(ref);
  const charsAfter =
    weightedChars(placeholder) +
    (keptMarkers + imagesToMarkers) * marker +
    Math.max(0, slots.length - 1) * weightedChars(REMOVED_PART_TEXT);
  if (charsAfter >= charsBefore) return undefined;
  if (slots.length > 0) {
    slots.forEach((slot, i) => slot.set(i === 0 ? placeholder : REMOVED_PART_TEXT));
    for (const image of ref.images) image.replaceWithText(IMAGE_PRUNED_TEXT);
  } else {
    ref.images.forEach((image, i) => image.replaceWithText(i === 0 ? placeholder : IMAGE_PRUNED_TEXT));
  }
  return { charsBefore, charsAfter };
}
