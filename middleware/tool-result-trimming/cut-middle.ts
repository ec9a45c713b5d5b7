/**
 * The middle cut of tool-result trimming (SPEC section 5): characters are Unicode code points, and
 * a cut never lands inside a surrogate pair. Works on code units with a surrogate-aware step, so a
 * 10 MB tool result is never spread into an array of code points.
 */
import { TRIM_MARKER } from '../../lib/trim-marker.ts';
import { countCodePoints, startOfLast, unitIndexOf } from '../../lib/code-points.ts';

export { countCodePoints };

/** The three trimming limits, all in code points. */
export interface CutLimits {
  readonly thresholdChars: number;
  readonly headChars: number;
  readonly tailChars: number;
}

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
  return text.slice(0, unitIndexOf(text, headChars)) + TRIM_MARKER + text.slice(startOfLast(text, tailChars));
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
