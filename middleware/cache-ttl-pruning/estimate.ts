/**
 * The size estimate cache-TTL pruning gates on (SPEC section 4): characters / 4 against the
 * model's context window. It counts what `RequestView.measure` reports per message (text,
 * reasoning, tool-call arguments, tool-result text; never the system prompt or tool definitions)
 * and 8000 characters per image.
 *
 * Characters are code points. A CJK ideograph, kana or Hangul code point is about one token on its
 * own, not a quarter of one, so each counts as `WIDE_CHAR_WEIGHT` (4) characters; otherwise a
 * Japanese or Korean chat would look four times smaller than it is and never be pruned.
 */
import type { RequestView } from '../../providers/request-view.ts';
import { widthAt } from '../../lib/code-points.ts';

/** Characters one image counts for. */
export const IMAGE_CHARS = 8000;
/** Characters per estimated token. */
export const CHARS_PER_TOKEN = 4;
/** Characters one CJK, kana or Hangul code point counts for (about one token). */
export const WIDE_CHAR_WEIGHT = 4;

/**
 * Code-point ranges counted as wide: Hangul Jamo and Jamo extensions, CJK radicals, CJK symbols
 * and punctuation, Hiragana, Katakana (and phonetic extensions), Hangul compatibility Jamo, Kanbun,
 * CJK strokes, enclosed CJK letters, CJK compatibility, CJK unified ideographs (extension A and
 * the main block), Hangul syllables, CJK compatibility ideographs and forms, half-width Katakana
 * and Hangul, the Kana supplements, and the supplementary ideograph planes (extensions B to I).
 */
const WIDE_RANGES: ReadonlyArray<readonly [number, number]> = [
  [0x1100, 0x11ff],
  [0x2e80, 0x2fdf],
  [0x3000, 0x303f],
  [0x3040, 0x30ff],
  [0x3130, 0x318f],
  [0x3190, 0x319f],
  [0x31c0, 0x31ff],
  [0x3200, 0x33ff],
  [0x3400, 0x4dbf],
  [0x4e00, 0x9fff],
  [0xa960, 0xa97f],
  [0xac00, 0xd7ff],
  [0xf900, 0xfaff],
  [0xfe30, 0xfe4f],
  [0xff61, 0xffdc],
  [0x1aff0, 0x1b16f],
  [0x20000, 0x323af],
];

/** A code unit that may start a wide code point or a surrogate pair (the slow path's business). */
const MAYBE_WIDE = /[\u1100-\uffff]/;

/** True when the code point counts as a wide (CJK, kana, Hangul) character. */
export function isWideCodePoint(cp: number): boolean {
  if (cp < 0x1100) return false;
  for (const [lo, hi] of WIDE_RANGES) {
    if (cp < lo) return false;
    if (cp <= hi) return true;
  }
  return false;
}

/** Estimate characters of one text: one per code point, `WIDE_CHAR_WEIGHT` per wide code point. */
export function weightedChars(text: string): number {
  // Most text has no code unit at or above U+1100: then every unit is one narrow code point.
  if (!MAYBE_WIDE.test(text)) return text.length;
  let chars = 0;
  for (let i = 0; i < text.length;) {
    const unit = text.charCodeAt(i);
    if (unit < 0x1100) {
      chars += 1;
      i += 1;
      continue;
    }
    const width = widthAt(text, i);
    const cp = width === 2 ? (text.codePointAt(i) ?? unit) : unit;
    chars += isWideCodePoint(cp) ? WIDE_CHAR_WEIGHT : 1;
    i += width;
  }
  return chars;
}

/** Estimate characters of every message the model would receive (system prompt excluded). */
export function estimateChars(view: RequestView): number {
  let chars = 0;
  view.measure({
    text: (text) => {
      chars += weightedChars(text);
    },
    image: () => {
      chars += IMAGE_CHARS;
    },
  });
  return chars;
}

/** Estimated tokens for a number of estimate characters (rounded up). */
export function charsToTokens(chars: number): number {
  return Math.ceil(chars / CHARS_PER_TOKEN);
}

/** Estimated tokens of the messages the model would receive: `estimateChars / 4`, rounded up. */
export function estimateTokens(view: RequestView): number {
  return charsToTokens(estimateChars(view));
}
