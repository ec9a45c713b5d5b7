/**
 * What trimming measures and cuts in a tool result (SPEC section 5): its text, meaning its text
 * parts in order, as one text. Images keep their places, and so do the texts the gateway writes in
 * an image's place (the note of an image set aside, the image replay clean-up's and pruning's
 * stand-ins): they come and go between requests (the clean-up runs after replay, set-aside after
 * the first send), so counting them would make the same tool result measure differently from one
 * request to the next. A part holding only `REMOVED_PART_TEXT` is what a cut left of a part it took
 * whole; leaving it out keeps a trimmed result within the threshold, so trimming it again changes
 * nothing.
 */
import type { TextSlot, ToolResultRef } from '../../providers/request-view.ts';
import { IMAGE_REMOVED_TEXT } from '../image-replay/index.ts';
import { IMAGE_PRUNED_TEXT } from '../cache-ttl-pruning/index.ts';
import { REMOVED_PART_TEXT } from './cut-parts.ts';

/**
 * The note an image set aside leaves (`[Image #3 set aside (image/png, ...) to fit the model's
 * image limits. Read-only copy: ...]`); its test checks the note the set-aside code writes.
 */
const SET_ASIDE_NOTE = /^\[Image #\d+ set aside[^]*? to fit the model's image limits\.[^]*\]$/;

/** True when `text` stands in for an image (set aside, cleaned up or pruned), not for the tool's text. */
export function isImageStandIn(text: string): boolean {
  if (text === IMAGE_REMOVED_TEXT || text === IMAGE_PRUNED_TEXT) return true;
  // Notes are short; the length check spares a long tool text the pattern.
  return text.length < 65_536 && text.startsWith('[Image #') && SET_ASIDE_NOTE.test(text);
}

/** One text part trimming measures, with its index among the result's text parts. */
export interface MeasuredPart {
  readonly slot: TextSlot;
  readonly index: number;
}

/** The text parts of `result` that make its text, in order. */
export function measuredParts(result: ToolResultRef): MeasuredPart[] {
  const parts: MeasuredPart[] = [];
  result.texts.forEach((slot, index) => {
    const text = slot.text;
    if (text === REMOVED_PART_TEXT || isImageStandIn(text)) return;
    parts.push({ slot, index });
  });
  return parts;
}
