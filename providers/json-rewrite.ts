/**
 * An edited JSON value written over the client's bytes for it: only the sub-values the edit changed
 * are serialised again; every sub-value whose parsed value is unchanged keeps its bytes. Writing a
 * whole message or member again would change what no mechanism owns: integers beyond 2^53 rounded,
 * integer-like object keys moved to the front (the order JavaScript keeps them in), `1.0` written
 * as `1`, `-0.0` as `0`, the client's spacing and escapes.
 *
 * An object whose original keys are all still there, in their order, with any new keys after them,
 * keeps its bytes with each member's value rewritten in turn and the new members inserted before
 * its closing brace; an array of at least its original length likewise, element by element. Any
 * other change (a key removed or moved, a key the client repeated, a value of another type) writes
 * that sub-value whole, as JSON.stringify does; bytes the scan cannot follow, the whole value.
 *
 * One pass over the bytes: a container's members are compared as they are read, and what was
 * written for them is taken back when the container turns out not to be kept.
 */
import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  endOfString,
  isJsonSpace,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
  skipJsonSpace,
} from './wire-json.ts';

/** Bytes the scan cannot follow as JSON: the value is written whole instead. */
class Unscannable extends Error {}

/** The client's bytes up to `end`, and the replacements, in order: `text` in place of [start, end). */
interface Out {
  readonly raw: Buffer;
  readonly end: number;
  readonly cuts: Array<{ start: number; end: number; text: string }>;
}

/**
 * The bytes `value` goes out as, in place of the client's bytes `raw[start, end)` for the value it
 * was parsed from (no surrounding space); undefined when `value` writes nothing (undefined).
 */
export function rewriteJson(raw: Buffer, start: number, end: number, value: unknown): Buffer | undefined {
  if (writesNothing(value)) return undefined;
  const out: Out = { raw, end, cuts: [] };
  try {
    if (!(start >= 0 && start < end && end <= raw.length) || write(out, start, value) !== end) {
      return Buffer.from(json(value), 'utf8');
    }
  } catch (err) {
    if (!(err instanceof Unscannable)) throw err;
    return Buffer.from(json(value), 'utf8');
  }
  const parts: Buffer[] = [];
  let at = start;
  for (const cut of out.cuts) {
    parts.push(raw.subarray(at, cut.start), Buffer.from(cut.text, 'utf8'));
    at = cut.end;
  }
  parts.push(raw.subarray(at, end));
  return Buffer.concat(parts);
}

/** True for a value JSON.stringify leaves out of an object (and writes as null in an array). */
function writesNothing(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/** The JSON of `value`, as JSON.stringify writes it in an array (undefined as null). */
function json(value: unknown): string {
  return (JSON.stringify(value) as string | undefined) ?? 'null';
}

/**
 * Writes `value` over the value whose bytes start at `at`, keeping what is unchanged; returns the
 * index just past those bytes.
 */
function write(out: Out, at: number, value: unknown): number {
  const first = out.raw[at];
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { toJSON?: unknown }).toJSON !== 'function'
  ) {
    if (first === OPEN_OBJECT && !Array.isArray(value))
      return writeObject(out, at, value as Record<string, unknown>);
    if (first === OPEN_ARRAY && Array.isArray(value)) return writeArray(out, at, value);
  }
  const end = endOfValue(out.raw, at, out.end);
  if (!sameLeaf(out.raw, at, end, value)) out.cuts.push({ start: at, end, text: json(value) });
  return end;
}

/**
 * True when the leaf at [start, end) parses to `value` (a big integer the body parsed to a rounded
 * number, and that nothing changed, is still equal and keeps its bytes).
 */
function sameLeaf(raw: Buffer, start: number, end: number, value: unknown): boolean {
  const first = raw[start];
  if (typeof value === 'string') {
    if (first !== QUOTE) return false;
    // A UTF-16 code unit takes 1 to 6 bytes (an escape): lengths outside that range differ.
    const inner = end - start - 2;
    if (inner < value.length || inner > 6 * value.length) return false;
    return stringAt(raw, start, end - 1) === value;
  }
  if (typeof value === 'object' || first === QUOTE || first === OPEN_OBJECT || first === OPEN_ARRAY) {
    return value === null && end - start === 4 && raw.toString('latin1', start, end) === 'null';
  }
  if (typeof value === 'boolean') return end - start === (value ? 4 : 5) && first === (value ? 0x74 : 0x66);
  if (typeof value === 'number' && end - start <= 15) {
    // A plain integer, read from its digits (most numbers are): no string to make.
    let n = 0;
    let i = first === 0x2d ? start + 1 : start;
    const digits = i;
    for (; i < end; i++) {
      const d = raw[i]! - 0x30;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    if (i === end && i > digits) return Object.is(first === 0x2d ? -n : n, value);
  }
  try {
    return Object.is(JSON.parse(raw.toString('latin1', start, end)), value);
  } catch {
    return false;
  }
}

/** The text of the string between quotes `open` and `close`, decoding escapes only when present. */
function stringAt(raw: Buffer, open: number, close: number): string {
  let escaped = false;
  if (close - open < SHORT) {
    for (let i = open + 1; i < close && !escaped; i++) escaped = raw[i] === BACKSLASH;
  } else escaped = raw.subarray(open + 1, close).includes(BACKSLASH);
  if (!escaped) return raw.toString('utf8', open + 1, close);
  return JSON.parse(raw.toString('utf8', open, close + 1)) as string;
}

/** Strings shorter than this are read byte by byte; longer ones with the native search. */
const SHORT = 128;

/** The index of the quote that closes the string opened at `open`. */
function closeOf(raw: Buffer, open: number, end: number): number {
  const stop = Math.min(end, open + SHORT);
  for (let i = open + 1; i < stop; i++) {
    const c = raw[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  const close = endOfString(raw, open);
  if (close >= end) throw new Unscannable();
  return close;
}

/** Index just past the value that starts at `at`. */
function endOfValue(raw: Buffer, at: number, end: number): number {
  const b = raw[at];
  if (b === QUOTE) return closeOf(raw, at, end) + 1;
  if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
    let depth = 0;
    for (let i = at; i < end; i++) {
      const c = raw[i]!;
      if (c === QUOTE) i = closeOf(raw, i, end);
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
      else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        if (--depth === 0) return i + 1;
      }
    }
    throw new Unscannable();
  }
  let i = at;
  while (i < end) {
    const c = raw[i]!;
    if (isJsonSpace(c) || c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || c === COLON) break;
    i++;
  }
  if (i === at) throw new Unscannable();
  return i;
}

/** The index of the next member or element after the one ending at `at`, or of the closing byte. */
function next(out: Out, at: number, close: number): { at: number; closed: boolean } {
  at = skipJsonSpace(out.raw, at, out.end);
  if (out.raw[at] === close) return { at, closed: true };
  if (out.raw[at] !== COMMA) throw new Unscannable();
  return { at: skipJsonSpace(out.raw, at + 1, out.end), closed: false };
}

/** Takes back what was written inside [at, end) since `mark`, and writes `value` whole there. */
function whole(out: Out, mark: number, at: number, end: number, value: unknown): number {
  out.cuts.length = mark;
  out.cuts.push({ start: at, end, text: json(value) });
  return end;
}

/** Writes the array `value` element by element over the array at `at`. */
function writeArray(out: Out, at: number, value: readonly unknown[]): number {
  const mark = out.cuts.length;
  let i = skipJsonSpace(out.raw, at + 1, out.end);
  let count = 0;
  if (out.raw[i] !== CLOSE_ARRAY) {
    for (;;) {
      if (i >= out.end) throw new Unscannable();
      i = count < value.length ? write(out, i, value[count]) : endOfValue(out.raw, i, out.end);
      count++;
      const step = next(out, i, CLOSE_ARRAY);
      i = step.at;
      if (step.closed) break;
    }
  }
  // An array made shorter: only the whole array says it.
  if (count > value.length) return whole(out, mark, at, i + 1, value);
  if (value.length > count) {
    const added = value.slice(count).map(json).join(',');
    out.cuts.push({ start: i, end: i, text: (count > 0 ? ',' : '') + added });
  }
  return i + 1;
}

/** Writes the object `value` member by member over the object at `at`. */
function writeObject(out: Out, at: number, value: Record<string, unknown>): number {
  const raw = out.raw;
  const mark = out.cuts.length;
  const sent: string[] = [];
  const keys = Object.keys(value);
  // Most often the keys are the client's, in the client's order (none added, none repeated).
  let same = true;
  let kept = true;
  let i = skipJsonSpace(raw, at + 1, out.end);
  if (raw[i] !== CLOSE_OBJECT) {
    for (;;) {
      if (raw[i] !== QUOTE) throw new Unscannable();
      const close = closeOf(raw, i, out.end);
      const key = stringAt(raw, i, close);
      same &&= keys[sent.length] === key;
      sent.push(key);
      i = skipJsonSpace(raw, close + 1, out.end);
      if (raw[i] !== COLON) throw new Unscannable();
      i = skipJsonSpace(raw, i + 1, out.end);
      if (i >= out.end) throw new Unscannable();
      // A key the edit removed: only the whole object says it.
      const child = kept && (same || Object.hasOwn(value, key)) ? value[key] : undefined;
      if (writesNothing(child)) kept = false;
      i = kept ? write(out, i, child) : endOfValue(raw, i, out.end);
      const step = next(out, i, CLOSE_OBJECT);
      i = step.at;
      if (step.closed) break;
    }
  }
  const added = !kept
    ? undefined
    : same && keys.length === sent.length
      ? ''
      : addedMembers(sent, keys, value);
  if (added === undefined) return whole(out, mark, at, i + 1, value);
  if (added !== '') out.cuts.push({ start: i, end: i, text: added });
  return i + 1;
}

/** True for a key JavaScript orders first, by number, in an object (an integer below 2^32). */
function isIndexKey(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 2 ** 32;
}

/**
 * The members `value` has beyond the client's keys `sent` (its own keys: `keys`), as JSON to insert
 * before the closing brace; undefined when the client repeated a key, or its keys are not in the
 * client's order past the array indexes JavaScript puts first.
 */
function addedMembers(
  sent: readonly string[],
  keys: readonly string[],
  value: Record<string, unknown>,
): string | undefined {
  const seen = new Set(sent);
  // A key the client repeated: parsed, the last value sits in the first one's place.
  if (seen.size !== sent.length) return undefined;
  const named = sent.filter((k) => !isIndexKey(k));
  const now = keys.filter((k) => !isIndexKey(k));
  for (let k = 0; k < named.length; k++) if (now[k] !== named[k]) return undefined;
  let added = '';
  for (const key of keys) {
    if (seen.has(key) || writesNothing(value[key])) continue;
    added += `${sent.length > 0 || added !== '' ? ',' : ''}${JSON.stringify(key)}:${json(value[key])}`;
  }
  return added;
}
