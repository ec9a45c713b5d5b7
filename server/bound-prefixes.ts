/**
 * What the chat binder remembers of a chat's recent requests, so a request that continues the chat
 * is recognised without comparing its whole history with the log: the hash of each recent request's
 * wire messages (its `messages`, or Responses `input`), and how many logged messages they stand for.
 * A new request whose first n wire messages hash the same continues after those logged messages;
 * only what follows is normalized, digested and appended.
 */
import { createHash, type Hash } from 'node:crypto';
import { forEachInTurns, type Turns } from '../lib/in-turns.ts';

/**
 * Where each element of the body's top-level `messages` (or Responses `input`) list is in the bytes
 * the client sent: element k spans `ranges[2k]` to `ranges[2k + 1]` (found by the body's shape
 * scan, `json-limits.ts`).
 */
export interface WireRanges {
  key: 'messages' | 'input';
  ranges: readonly number[];
}

/** The bytes and element ranges of the request's wire list, when the ranges are of that very list. */
export function sentList(
  raw: Buffer | undefined,
  wireRanges: WireRanges | undefined,
  body: Readonly<Record<string, unknown>>,
  wire: readonly unknown[],
): { raw: Buffer; ranges: readonly number[] } | undefined {
  if (!raw || !wireRanges || wire !== body[wireRanges.key]) return undefined;
  return { raw, ranges: wireRanges.ranges };
}

/**
 * The bytes a remembered prefix was hashed from, kept with the newest prefix of a chat (while
 * `BoundPrefixes`' budget allows) so the chat's next request compares its bytes with them (a
 * memcmp) instead of hashing its whole history again: sha256 costs about 0.6 ms per MB, the
 * comparison a twentieth of that.
 */
export interface SentPrint {
  /** The wire list's bytes as sent, from its first message to the end of its last. */
  readonly bytes: Buffer;
  /** The running hash right after those bytes (its digest is the prefix's hash); only ever copied. */
  readonly state: Hash;
}

/** The request's wire-list hashes by message count, of the whole list, and its print (bytes road). */
export interface WireHashes {
  at: Map<number, string>;
  full: string;
  /** The print of the whole list, for the prefix this request will be remembered as. */
  print?: SentPrint;
}

/** Bodies under this size have their print copied out (a small body may sit in a shared pool slab). */
const COPY_PRINT_BELOW = 16 * 1024;

function printOf(bytes: Buffer, state: Hash): SentPrint {
  if (bytes.length >= COPY_PRINT_BELOW) return { bytes, state };
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return { bytes: own, state };
}

/**
 * sha256 of the first n wire messages for each n of `counts` (at most the list's length), and of
 * all of them, in one pass. From the bytes as sent when their ranges are known (the span from the
 * first message to the end of the n-th: equal bytes mean equal parsed messages, and no message is
 * serialised again), else from each message's JSON (equal JSON means equal parsed messages). The
 * two kinds never compare equal.
 *
 * `resume`: a remembered prefix with its print (the chat's newest). When the request's bytes up to
 * that prefix's length equal the print's, its hash is that prefix's, and hashing goes on from the
 * print's state over the bytes after it only; the lengths below it are then not hashed (a shorter
 * prefix can never be the longest verified one).
 */
export async function wirePrefixHashes(
  wire: readonly unknown[],
  counts: readonly number[],
  turns: Turns | undefined,
  sent?: { raw: Buffer; ranges: readonly number[] },
  resume?: Pick<PrefixEntry, 'wireCount' | 'hash' | 'print'>,
  /** False when the request will not be remembered from these hashes (no print is made). */
  withPrint = true,
): Promise<WireHashes> {
  const at = new Map<number, string>();
  let cuts = [...new Set(counts)].filter((n) => n <= wire.length).sort((a, b) => a - b);
  if (sent && sent.ranges.length === 2 * wire.length && wire.length > 0) {
    const { raw, ranges } = sent;
    const start = ranges[0]!;
    const end = ranges[2 * wire.length - 1]!;
    let h: Hash | undefined;
    let from = start;
    const resumed = resume?.print && resumeAt(raw, ranges, wire.length, resume.wireCount, resume.print);
    if (resumed !== undefined) {
      at.set(resume!.wireCount, resume!.hash);
      h = resume!.print!.state.copy();
      from = resumed;
      cuts = cuts.filter((n) => n > resume!.wireCount);
    } else h = createHash('sha256').update('bytes\n');
    for (const n of cuts) {
      const cut = n === 0 ? from : ranges[2 * n - 1]!;
      at.set(n, h.update(raw.subarray(from, cut)).copy().digest('hex'));
      from = cut;
    }
    h.update(raw.subarray(from, end));
    const print = withPrint ? printOf(raw.subarray(start, end), h.copy()) : undefined;
    return { at, full: h.digest('hex'), ...(print ? { print } : {}) };
  }
  const h = createHash('sha256');
  const wanted = new Set(cuts);
  // A slice at a time, so a long history does not hold up every other request (SPEC section 14).
  await forEachInTurns(
    wire,
    (m, i) => {
      if (wanted.has(i)) at.set(i, h.copy().digest('hex'));
      h.update(JSON.stringify(m) ?? 'null');
      h.update('\n');
    },
    turns,
  );
  if (wanted.has(wire.length)) at.set(wire.length, h.copy().digest('hex'));
  return { at, full: h.digest('hex') };
}

/**
 * Where the request's bytes after the first `n` wire messages begin, when those n messages are
 * byte for byte the print's (n >= 1); undefined otherwise.
 */
function resumeAt(
  raw: Buffer,
  ranges: readonly number[],
  length: number,
  n: number,
  print: SentPrint,
): number | undefined {
  if (n < 1 || n > length) return undefined;
  const start = ranges[0]!;
  const cut = ranges[2 * n - 1]!;
  if (cut - start !== print.bytes.length) return undefined;
  return raw.subarray(start, cut).equals(print.bytes) ? cut : undefined;
}

/**
 * The wire messages of one of a chat's recent bound requests, hashed, and the chat (or branch)
 * they are in.
 */
export interface PrefixEntry {
  wireCount: number;
  hash: string;
  /** How many logged messages of `chatId` those wire messages stand for. */
  loggedCount: number;
  chatId: string;
  /** The bytes the hash was taken of (the chat's newest prefix only, while the budget allows). */
  print?: SentPrint;
}

/**
 * The longest of `candidates` (remembered prefixes, or binds in progress) whose hash `hashes` (by
 * wire count) confirms, covering more than the first `from` messages (any length by default).
 */
export function longestVerified<T extends { readonly wireCount: number; readonly hash: string }>(
  candidates: readonly T[],
  hashes: ReadonlyMap<number, string>,
  from = -1,
): T | undefined {
  let best: T | undefined;
  for (const c of candidates) {
    if (c.wireCount > from && hashes.get(c.wireCount) === c.hash && (!best || c.wireCount > best.wireCount))
      best = c;
  }
  return best;
}

/** Recent prefixes kept per chat (concurrent requests of one chat arrive in any order). */
const PREFIXES_PER_CHAT = 8;
/** Chats whose prefixes are kept; the least recently bound one is forgotten first. */
const CHATS_KEPT = 10_000;
/**
 * Bytes of request bodies kept as prints, all chats together: a long chat's next turn compares its
 * history's bytes with its newest print instead of hashing them. Beyond it the least recently bound
 * chats' prints go (their prefixes stay, checked by hash).
 */
export const PRINT_BUDGET_BYTES = 16 * 1024 * 1024;

/** What a print holds in memory: the allocation its bytes keep alive. */
function printBytes(print: SentPrint): number {
  return print.bytes.buffer.byteLength;
}

/** The recent prefixes of the most recently bound chats, newest first per chat. */
export class BoundPrefixes {
  private readonly byChat = new Map<string, PrefixEntry[]>();
  /** Chats whose newest prefix holds a print, least recently bound first, with its size. */
  private readonly printed = new Map<string, number>();
  private printedBytes = 0;

  constructor(private readonly printBudget = PRINT_BUDGET_BYTES) {}

  /**
   * The prefixes a request naming chat `id` may continue: the newest wherever it leads (a branch of
   * the chat, too), older ones only into the chat itself, where they find what a full comparison
   * would.
   */
  candidates(id: string): PrefixEntry[] {
    return (this.byChat.get(id) ?? []).filter((c, i) => i === 0 || c.chatId === id);
  }

  /** Forgets chat `id`'s prefixes (its log is not the one they were verified against). */
  forget(id: string): void {
    this.byChat.delete(id);
    this.dropPrint(id);
  }

  /** Bytes held as prints, all chats together. */
  get heldBytes(): number {
    return this.printedBytes;
  }

  /**
   * Notes a bound request's prefix first; after a compaction, the chat's earlier ones are gone.
   * Beyond the limit the most redundant earlier one goes (the one whose length is nearest another's),
   * so the lengths kept stay spread out and a late request still finds one shortly before its own.
   * Only the new prefix keeps its print (within the budget).
   */
  remember(id: string, entry: PrefixEntry, compacted: boolean): void {
    const earlier = compacted ? [] : (this.byChat.get(id) ?? []);
    this.dropPrint(id);
    const kept = [entry, ...earlier.filter((e) => e.wireCount !== entry.wireCount)];
    while (kept.length > PREFIXES_PER_CHAT) {
      const counts = kept.map((e) => e.wireCount).sort((a, b) => a - b);
      const gap = (n: number) => {
        const i = counts.indexOf(n);
        return Math.min(n - (counts[i - 1] ?? -Infinity), (counts[i + 1] ?? Infinity) - n);
      };
      let drop = 1;
      for (let i = 2; i < kept.length; i++)
        if (gap(kept[i]!.wireCount) < gap(kept[drop]!.wireCount)) drop = i;
      kept.splice(drop, 1);
    }
    this.byChat.delete(id);
    this.byChat.set(id, kept);
    if (entry.print) this.holdPrint(id, entry);
    if (this.byChat.size > CHATS_KEPT) this.forget(this.byChat.keys().next().value as string);
  }

  private holdPrint(id: string, entry: PrefixEntry): void {
    const size = printBytes(entry.print!);
    if (size > this.printBudget) {
      delete entry.print;
      return;
    }
    this.printed.set(id, size);
    this.printedBytes += size;
    while (this.printedBytes > this.printBudget) this.dropPrint(this.printed.keys().next().value as string);
  }

  /** Takes the print off chat `id`'s prefixes (they stay, checked by hash). */
  private dropPrint(id: string): void {
    const size = this.printed.get(id);
    if (size === undefined) return;
    this.printed.delete(id);
    this.printedBytes -= size;
    for (const e of this.byChat.get(id) ?? []) delete e.print;
  }
}

/** A bind of the chat in progress: its wire messages' count and hash; `done` once it is over. */
export interface PendingBind {
  readonly wireCount: number;
  readonly hash: string;
  /** Resolves when the bind is over (remembered, or failed); never rejects. */
  readonly done: Promise<void>;
}

/**
 * The binds of each chat in progress, in the order they started. Concurrent requests of one chat (an
 * agent's parallel calls, a burst of turns) each carry the history the others are still logging: a
 * request that extends (or repeats) one of them waits for it to be remembered, then compares only
 * what follows it instead of its whole history. A request waits only for binds that started before
 * its own, so no two wait for each other.
 */
export class PendingBinds {
  private readonly byChat = new Map<string, PendingBind[]>();

  /** Notes a bind of chat `id`; returns the binds in progress that started before it and its end. */
  start(id: string, wireCount: number, hash: string): { earlier: PendingBind[]; settle(): void } {
    const list = this.byChat.get(id) ?? [];
    const earlier = [...list];
    let resolve!: () => void;
    const entry: PendingBind = { wireCount, hash, done: new Promise<void>((r) => (resolve = r)) };
    list.push(entry);
    this.byChat.set(id, list);
    let settled = false;
    return {
      earlier,
      settle: () => {
        if (settled) return;
        settled = true;
        resolve();
        const now = this.byChat.get(id);
        const i = now ? now.indexOf(entry) : -1;
        if (i === -1) return;
        now!.splice(i, 1);
        if (now!.length === 0) this.byChat.delete(id);
      },
    };
  }

  /** How many binds of chat `id` are in progress. */
  count(id: string): number {
    return this.byChat.get(id)?.length ?? 0;
  }
}

/**
 * Waits for the longest of `pending` (binds of the chat that started before this request's) whose
 * wire messages the request starts with, beyond the `from` messages already verified; hashes the
 * request's prefixes at their lengths first when `hashes` lacks them (added to `hashes`; from
 * `resume`'s print on, as `wirePrefixHashes` does). True when it waited: the chat's remembered
 * prefixes then hold that bind's.
 */
export async function awaitExtendedBind(
  pending: readonly PendingBind[],
  wire: readonly unknown[],
  hashes: Map<number, string>,
  from: number,
  turns: Turns | undefined,
  sent: { raw: Buffer; ranges: readonly number[] } | undefined,
  resume?: Pick<PrefixEntry, 'wireCount' | 'hash' | 'print'>,
): Promise<boolean> {
  if (pending.length === 0) return false;
  const counts = pending
    .map((p) => p.wireCount)
    .filter((n) => n > from && n <= wire.length && !hashes.has(n));
  if (counts.length > 0) {
    const more = await wirePrefixHashes(wire, counts, turns, sent, resume, false);
    for (const [n, h] of more.at) hashes.set(n, h);
  }
  const ahead = longestVerified(pending, hashes, from);
  if (!ahead) return false;
  await ahead.done;
  return true;
}
