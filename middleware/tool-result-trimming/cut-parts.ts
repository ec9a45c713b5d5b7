/**
 * The middle cut of a tool result whose text is spread over several text parts (SPEC section 5;
 * MCP tools often answer with many text blocks): the parts are measured as one text, the head is
 * kept from the first parts and the tail from the last, and the marker goes where the cut starts.
 * Every part keeps its place. A part that falls wholly in the removed middle holds
 * `REMOVED_PART_TEXT`, never nothing: Anthropic refuses an empty text block ("text content blocks
 * must be non-empty"), inside a tool result too. Cache-TTL pruning's soft trim lays parts out the
 * same way.
 */
import { TRIM_MARKER } from '../../lib/trim-marker.ts';
import { countCodePoints, startOfLast, unitIndexOf } from '../../lib/code-points.ts';
import { REMOVED_PART_TEXT } from '../cache-ttl-pruning/soft-trim.ts';

export { REMOVED_PART_TEXT };

/**
 * The parts after keeping the first `headChars` and the last `tailChars` code points of their
 * concatenation, with TRIM_MARKER between. `counts` holds each part's code points; the caller makes
 * sure they add up to more than `headChars + tailChars`. One part gives exactly what
 * `keepHeadAndTail` gives, so single-part records replay to the same bytes.
 */
export function cutParts(
  texts: readonly string[],
  counts: readonly number[],
  headChars: number,
  tailChars: number,
): string[] {
  const total = counts.reduce((a, b) => a + b, 0);
  const cutStart = headChars;
  const cutEnd = total - tailChars;
  let offset = 0;
  return texts.map((text, i) => {
    const n = counts[i] ?? 0;
    const start = offset;
    const end = offset + n;
    offset = end;
    let out = '';
    if (start < cutStart) out += text.slice(0, unitIndexOf(text, Math.min(end, cutStart) - start));
    if (start <= cutStart && cutStart < end) out += TRIM_MARKER;
    if (end > cutEnd) out += text.slice(startOfLast(text, end - Math.max(start, cutEnd)));
    return out === '' && n > 0 ? REMOVED_PART_TEXT : out;
  });
}

/** Code points of each text, for `cutParts`. */
export function partCounts(texts: readonly string[]): number[] {
  return texts.map((text) => countCodePoints(text));
}
