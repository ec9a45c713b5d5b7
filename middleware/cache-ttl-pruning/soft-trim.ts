/**
 * The soft trim of one tool result (SPEC section 4): a result whose text is longer than
 * `maxChars` keeps its first `headChars` and last `tailChars` code points, with `\n...\n` between
 * and a note after.
 *
 * A result with several text parts is trimmed as one text (the parts joined without separators):
 * the head and tail are cut from that whole, every part keeps its place, `\n...\n` goes where the
 * cut starts and the note ends the last non-empty part. A part that falls wholly in the removed
 * middle holds `REMOVED_PART_TEXT`, never nothing: Anthropic refuses an empty text block, inside a
 * tool result too. So the parts, joined, read like the trim of the joined text with that mark for
 * each part the cut took whole.
 */
import { countCodePoints, sliceCodePoints } from '../../lib/code-points.ts';

export const SOFT_TRIM_SEPARATOR = '\n...\n';

/** What a text part holds when an edit took all of its text (a provider may refuse empty text). */
export const REMOVED_PART_TEXT = '[...]';

export interface SoftTrimLimits {
  readonly maxChars: number;
  readonly headChars: number;
  readonly tailChars: number;
}

/** The note after a soft-trimmed result; `total` is the original length in code points. */
export function softTrimNote(head: number, tail: number, total: number): string {
  return `\n\n[Tool result trimmed: kept first ${head} chars and last ${tail} chars of ${total} chars.]`;
}

const NOTE_AT_END = /\n\n\[Tool result trimmed: kept first \d+ chars and last \d+ chars of \d+ chars\.\]$/;

/** True when the text already ends with a soft-trim note: trimming it again changes nothing. */
export function isSoftTrimmed(text: string): boolean {
  return NOTE_AT_END.test(text.slice(-120));
}

/**
 * The soft-trimmed parts, or undefined when the result stays as it is: not longer than
 * `maxChars`, already trimmed, or not made shorter by the trim (head + separator + tail + note must
 * hold fewer code points than the original).
 */
export function softTrimParts(parts: readonly string[], limits: SoftTrimLimits): string[] | undefined {
  const counts = parts.map((part) => countCodePoints(part));
  const total = counts.reduce((a, b) => a + b, 0);
  if (total <= limits.maxChars) return undefined;
  const head = limits.headChars;
  const tail = limits.tailChars;
  const note = softTrimNote(head, tail, total);
  const added = countCodePoints(SOFT_TRIM_SEPARATOR) + countCodePoints(note);
  if (head + tail + added >= total) return undefined;
  if (isSoftTrimmed(parts.join(''))) return undefined;

  const cutStart = head;
  const cutEnd = total - tail;
  let lastNonEmpty = -1;
  counts.forEach((n, i) => {
    if (n > 0) lastNonEmpty = i;
  });
  let offset = 0;
  const out = parts.map((part, i) => {
    const n = counts[i] ?? 0;
    const start = offset;
    const end = offset + n;
    offset = end;
    let out = '';
    if (start < cutStart) out += sliceCodePoints(part, 0, Math.min(end, cutStart) - start);
    if (start <= cutStart && cutStart < end) out += SOFT_TRIM_SEPARATOR;
    if (end > cutEnd) out += sliceCodePoints(part, Math.max(start, cutEnd) - start, n);
    if (i === lastNonEmpty) out += note;
    return out === '' && n > 0 ? REMOVED_PART_TEXT : out;
  });
  // Many short parts wholly in the cut, each holding the mark, could outweigh what the cut saves.
  return countCodePoints(out.join('')) < total ? out : undefined;
}
