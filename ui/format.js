// @ts-check
/** Small formatting helpers for numbers, sizes and times. */

const numbers = new Intl.NumberFormat('en-US');

/** @param {unknown} n */
export function num(n) {
  return typeof n === 'number' && Number.isFinite(n) ? numbers.format(n) : '–';
}

/** @param {number} bytes */
export function bytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * A timestamp (ms since the epoch) as local date and time, to the second.
 * @param {unknown} ms
 */
export function time(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '–';
  const d = new Date(ms);
  const pad = (/** @type {number} */ v) => String(v).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * Milliseconds for people.
 * @param {unknown} ms
 */
export function duration(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '–';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Characters in code points, as the mechanisms count them.
 * @param {string} text
 */
export function codePoints(text) {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * The JSON text pretty-printed when it parses, else as it is.
 * @param {string} text
 */
export function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
