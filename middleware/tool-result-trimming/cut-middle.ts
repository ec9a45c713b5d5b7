/**
 * The middle cut of tool-result trimming (SPEC section 5): characters are Unicode code points, and
 * a cut never lands inside a surrogate pair. Works on code units with a surrogate-aware step, so a
 * 10 MB tool result is never spread into an array of code points.
 */
import { TRIM_MARKER } from '../../server/config.ts';

/** The three trimming limits, all in code points. */
export interface CutLimits {
  readonly thresholdChars: number;
  readonly headChars: number;
  readonly tailChars: number;
}

function isHigh(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Code-unit width of the code point starting at `i` (2 for a well-formed surrogate pair). */
function widthAt(text: string, i: number): number {
  return isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
}

/** Code-unit width of the code point ending just before `end`. */
function widthBefore(text: string, end: number): number {
  return isLow(text.charCodeAt(end - 1)) && end - 2 >= 0 && isHigh(text.charCodeAt(end - 2)) ? 2 : 1;
}

/**
 * Code points in `text`, counting at most `limit + 1` of them: enough to tell "more than limit"
 * without walking the rest of a huge string. A lone surrogate counts as one code point.
 */
export function countCodePoints(text: string, limit = Number.POSITIVE_INFINITY): number {
  let count = 0;
  let i = 0;
  while (i < text.length && count <= limit) {
    i += widthAt(text, i);
    count += 1;
  }
  return count;
}

/** Code-unit index just after the first `n` code points of `text`. */
function afterFirst(text: string, n: number): number {
  let i = 0;
  for (let k = 0; k < n && i < text.length; k++) i += widthAt(text, i);
  return i;
}

/** Code-unit index where the last `n` code points of `text` start. */
function startOfLast(text: string, n: number): number {
  let end = text.length;
  for (let k = 0; k < n && end > 0; k++) end -= widthBefore(text, end);
  return end;
}

/** Code points of the marker, the unit the limits are validated in. */
export const TRIM_MARKER_CHARS = countCodePoints(TRIM_MARKER);

/** Throws when the limits break the contract the config schema enforces (SPEC section 5). */
export function assertCutLimits(limits: CutLimits): void {
  const { thresholdChars, headChars, tailChars } = limits;
  const whole =
    Number.isSafeInteger(thresholdChars) &&
    Number.isSafeInteger(headChars) &&
    Number.isSafeInteger(tailChars);
  if (!whole || thresholdChars <= 0 || headChars < 0 || tailChars < 0) {
    throw new RangeError('trimming limits must be whole numbers, thresholdChars positive and head/tail >= 0');
  }
  if (headChars + TRIM_MARKER_CHARS + tailChars > thresholdChars) {
    // Without this a trimmed text could exceed the threshold and be cut again: not idempotent.
    throw new RangeError(
      `headChars (${headChars}) + marker (${TRIM_MARKER_CHARS}) + tailChars (${tailChars}) must fit in thresholdChars (${thresholdChars})`,
    );
  }
}

/**
 * The first `headChars` code points, the marker, and the last `tailChars` code points of `text`.
 * Used by the first trim and by replay alike, so both produce the same bytes. The caller makes
 * sure `text` holds more than `headChars + tailChars` code points.
 */
export function keepHeadAndTail(text: string, headChars: number, tailChars: number): string {
  return text.slice(0, afterFirst(text, headChars)) + TRIM_MARKER + text.slice(startOfLast(text, tailChars));
}

/**
 * `text` unchanged when it holds at most `thresholdChars` code points; otherwise its first
 * `headChars` code points, TRIM_MARKER, and its last `tailChars` code points. Idempotent for valid
 * limits, since the result then holds at most `thresholdChars` code points.
 */
export function cutMiddle(text: string, limits: CutLimits): string {
  assertCutLimits(limits);
  // Fast path: code points never outnumber code units.
  if (text.length <= limits.thresholdChars) return text;
  if (countCodePoints(text, limits.thresholdChars) <= limits.thresholdChars) return text;
  return keepHeadAndTail(text, limits.headChars, limits.tailChars);
}
