/**
 * A long chat's history parsed once. Every request of a chat carries the whole history, and the
 * history's messages are the same bytes as in the chat's previous request; parsing them again cost
 * about 1-2 ms per MB and, worse, a megabyte of fresh strings and objects per request for the
 * garbage collector. Here the elements of a large body's message list are parsed once and kept as
 * parsed (never handed out); a later body whose element has the same bytes at the same index gets a
 * copy of the kept value instead of a parse: new objects and arrays (each request's mechanisms edit
 * their own), the strings shared (JavaScript strings cannot change). Which remembered list to
 * compare with is found by the bytes of the list's first element.
 */
import { sha256Hex } from '../lib/sha256.ts';

/**
 * Most bytes of remembered bodies kept for all lists together (the bodies themselves, which the
 * comparison reads, and about as much again of parsed values); the least recently used list goes
 * first.
 */
export const PARSED_LISTS_BUDGET_BYTES = 16 * 1024 * 1024;

/** Bytes of a list's first element that name it (with its length): enough to tell chats apart. */
const KEY_BYTES = 64 * 1024;

interface RememberedList {
  readonly bytes: Buffer;
  readonly ranges: readonly number[];
  /** The elements as JSON.parse gave them; never handed out, never changed. */
  readonly values: readonly unknown[];
}

/** Large bodies' message lists, parsed, by their first element (one per app). */
export class ParsedLists {
  private readonly lists = new Map<string, RememberedList>();
  private size = 0;
  /** Elements copied from a remembered parse, and elements parsed (since the app started). */
  copied = 0;
  parsed = 0;
  /** Byte comparisons made with remembered lists (for tests: a resent history takes one). */
  compared = 0;

  constructor(private readonly budget = PARSED_LISTS_BUDGET_BYTES) {}

  /** Bytes of remembered bodies held now (for tests and metrics). */
  get heldBytes(): number {
    return this.size;
  }

  /**
   * A reader of the list whose element k spans `ranges[2k]` to `ranges[2k + 1]` in `bytes`, which
   * must not change while the list is remembered (a request's body as read).
   */
  reader(bytes: Buffer, ranges: readonly number[]): ListReader {
    if (ranges.length === 0 || bytes.length > this.budget) return new ListReader(bytes, ranges);
    const key = listKey(bytes, ranges);
    return new ListReader(bytes, ranges, this, key, this.lists.get(key));
  }

  /** Keeps `list` under `key` (replacing the list there), within the budget. */
  remember(key: string, list: RememberedList): void {
    this.forget(key);
    this.lists.set(key, list);
    this.size += list.bytes.length;
    while (this.size > this.budget) this.forget(this.lists.keys().next().value as string);
  }

  private forget(key: string): void {
    const old = this.lists.get(key);
    if (!old) return;
    this.lists.delete(key);
    this.size -= old.bytes.length;
  }
}

/** The first element's length and the hash of its first `KEY_BYTES` bytes. */
function listKey(bytes: Buffer, ranges: readonly number[]): string {
  const from = ranges[0]!;
  const to = ranges[1]!;
  return `${to - from}:${sha256Hex(bytes.subarray(from, Math.min(to, from + KEY_BYTES)))}`;
}

/** Parses one list's elements, each from a remembered copy when its bytes are the same. */
export class ListReader {
  private readonly values: unknown[];
  /**
   * Elements before this index have the same bytes as the remembered list's, proven together
   * (`provenPrefix`); undefined until the first element is read.
   */
  private proven: number | undefined;

  constructor(
    private readonly bytes: Buffer,
    private readonly ranges: readonly number[],
    private readonly owner?: ParsedLists,
    private readonly key?: string,
    private readonly known?: RememberedList,
  ) {
    this.values = owner ? new Array<unknown>(ranges.length / 2) : [];
  }

  /** Element k as JSON.parse gives it; throws JSON.parse's SyntaxError when it is not JSON. */
  value(k: number): unknown {
    const from = this.ranges[2 * k]!;
    const to = this.ranges[2 * k + 1]!;
    if (!this.owner) return JSON.parse(this.bytes.toString('utf8', from, to));
    const known = this.known;
    if (known && 2 * k + 1 < known.ranges.length) {
      this.proven ??= this.provenPrefix(known);
      const kFrom = known.ranges[2 * k]!;
      const kTo = known.ranges[2 * k + 1]!;
      if (k < this.proven || (kTo - kFrom === to - from && this.same(known, kFrom, kTo, from, to))) {
        const kept = known.values[k];
        this.values[k] = kept;
        this.owner.copied++;
        return copyJson(kept);
      }
    }
    const parsed: unknown = JSON.parse(this.bytes.toString('utf8', from, to));
    this.values[k] = parsed;
    this.owner.parsed++;
    return copyJson(parsed);
  }

  private same(known: RememberedList, kFrom: number, kTo: number, from: number, to: number): boolean {
    this.owner!.compared++;
    return this.bytes.compare(known.bytes, kFrom, kTo, from, to) === 0;
  }

  /**
   * How many leading elements have the same bytes as the remembered list's, proven with one
   * comparison: where elements lie at the same places relative to the list's first (a history
   * resent as it was), one comparison of their whole span proves them all, instead of one call per
   * message (a long chat has a thousand). When that span differs (an element edited in place, same
   * length), none is proven this way and each element is compared on its own, as are the elements
   * after the aligned ones.
   */
  private provenPrefix(known: RememberedList): number {
    const shift = this.ranges[0]! - known.ranges[0]!;
    const n = Math.min(this.ranges.length, known.ranges.length);
    let aligned = 0;
    while (aligned < n && this.ranges[aligned]! - shift === known.ranges[aligned]) aligned++;
    const count = aligned >> 1;
    if (count === 0) return 0;
    const end = 2 * count - 1;
    return this.same(known, known.ranges[0]!, known.ranges[end]!, this.ranges[0]!, this.ranges[end]!)
      ? count
      : 0;
  }

  /** Remembers the list once every element was read (a list that failed to parse is not kept). */
  remember(): void {
    if (!this.owner) return;
    this.owner.remember(this.key!, { bytes: this.bytes, ranges: this.ranges, values: this.values });
  }
}

/**
 * A copy of a value JSON.parse made: new objects and arrays, keys in the same order, the same
 * strings. A `__proto__` key stays an own property, as JSON.parse makes it.
 */
export function copyJson(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyJson(value[i]);
    return out;
  }
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  // `for...in`, not Object.keys: no array of keys per object (a long history has thousands).
  for (const key in source) {
    if (!Object.hasOwn(source, key)) continue;
    const v = copyJson(source[key]);
    if (key === '__proto__') {
      Object.defineProperty(out, key, { value: v, writable: true, enumerable: true, configurable: true });
    } else out[key] = v;
  }
  return out;
}
