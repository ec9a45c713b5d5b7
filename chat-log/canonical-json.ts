/**
 * Canonical JSON: object keys sorted, no whitespace. Used where a digest must not depend on the
 * order fields were written in (message digests, tool definition digests, schema fingerprints).
 * Digests of it are stored in logs and fingerprints, so its text never changes: the quick writer
 * below gives exactly what the reference definition (JSON.stringify with a key-sorting replacer)
 * gives, and hands anything it does not handle itself to the reference.
 */

/** The reference definition: JSON text of `value` with every object's keys sorted (code-unit order). */
export function canonicalJsonByReplacer(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const rec = v as Record<string, unknown>;
    // null prototype: a "__proto__" key stays an ordinary member
    const sorted = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(rec).sort()) sorted[k] = rec[k];
    return sorted;
  });
}

/** Thrown by the quick writer for a value only the reference handles (toJSON, boxed values, bigint). */
const NOT_PLAIN = Symbol('not plain JSON');

/** True for a key an object lists before the others, in numeric order (0 to 2^32 - 2). */
function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9][0-9]{0,9})$/.test(key) && Number(key) <= 4294967294;
}

/** Below this many keys, an insertion sort in place: no copy and no sort buffer per object. */
const SMALL_OBJECT_KEYS = 16;

/** Sorts `keys[from..]` in place in code-unit order, as Array.prototype.sort sorts strings. */
function sortFrom(keys: string[], from: number): void {
  if (keys.length - from > SMALL_OBJECT_KEYS) {
    const sorted = keys.slice(from).sort();
    for (let i = 0; i < sorted.length; i++) keys[from + i] = sorted[i]!;
    return;
  }
  for (let i = from + 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= from && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
}

/** The text of `v`, or undefined where JSON.stringify leaves a member out. */
function write(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
    case 'number':
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'object':
      break;
    default:
      throw NOT_PLAIN;
  }
  if (v === null) return 'null';
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) throw NOT_PLAIN;
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out += ',';
      out += write(v[i]) ?? 'null';
    }
    return `${out}]`;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) throw NOT_PLAIN;
  const rec = v as Record<string, unknown>;
  if (typeof rec.toJSON === 'function') throw NOT_PLAIN;
  // The reference's order: its sorted copy is an object, which lists array-index keys first in
  // numeric order (Object.keys already gives them so), then the other keys in sorted order.
  const keys = Object.keys(rec);
  let indices = 0;
  while (indices < keys.length && isArrayIndex(keys[indices]!)) indices++;
  sortFrom(keys, indices);
  let out = '{';
  let first = true;
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const text = write(rec[k]);
    if (text === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(k)}:${text}`;
    first = false;
  }
  return `${out}}`;
}

/** JSON text of `value` with every object's keys sorted (code-unit order). */
export function canonicalJson(value: unknown): string {
  try {
    return write(value) as string;
  } catch (err) {
    // A value it does not handle, or one nested past the stack (a cycle): the reference decides.
    if (err !== NOT_PLAIN && !(err instanceof RangeError)) throw err;
    return canonicalJsonByReplacer(value);
  }
}
