/**
 * Code-point arithmetic over UTF-16 strings, without spreading a large text into an array: the
 * mechanisms count and cut characters as Unicode code points, and a cut never lands inside a
 * surrogate pair. A lone surrogate counts as one code point.
 */

function isHigh(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Code-unit width (1 or 2) of the code point that starts at unit index `i`. */
export function widthAt(text: string, i: number): number {
  return isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1)) ? 2 : 1;
}

/** Code-unit width of the code point ending just before `end`. */
function widthBefore(text: string, end: number): number {
  return isLow(text.charCodeAt(end - 1)) && end - 2 >= 0 && isHigh(text.charCodeAt(end - 2)) ? 2 : 1;
}

/**
 * Code points in `text`, counting at most `limit + 1` of them: enough to tell "more than limit"
 * without walking the rest of a huge string.
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

/** Code-unit index just after the first `n` code points of `text` (clamped to its length). */
export function unitIndexOf(text: string, n: number): number {
  let i = 0;
  for (let k = 0; k < n && i < text.length; k++) i += widthAt(text, i);
  return i;
}

/** Code-unit index where the last `n` code points of `text` start. */
export function startOfLast(text: string, n: number): number {
  let end = text.length;
  for (let k = 0; k < n && end > 0; k++) end -= widthBefore(text, end);
  return end;
}

/** The code points `[start, end)` of `text`. */
export function sliceCodePoints(text: string, start: number, end: number): string {
  if (end <= start) return '';
  const from = unitIndexOf(text, start);
  let to = from;
  for (let k = start; k < end && to < text.length; k++) to += widthAt(text, to);
  return text.slice(from, to);
}
