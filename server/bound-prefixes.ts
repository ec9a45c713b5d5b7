/**
 * What the chat binder remembers of a chat's recent requests, so a request that continues the chat
 * is recognised without comparing its whole history with the log: the hash of each recent request's
 * wire messages (its `messages`, or Responses `input`), and how many logged messages they stand for.
 * A new request whose first n wire messages hash the same continues after those logged messages;
 * only what follows is normalized, digested and appended.
 */
import { createHash } from 'node:crypto';
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
 * sha256 of the first n wire messages for each n of `counts` (at most the list's length), and of
 * all of them, in one pass. From the bytes as sent when their ranges are known (the span from the
 * first message to the end of the n-th: equal bytes mean equal parsed messages, and no message is
 * serialised again), else from each message's JSON (equal JSON means equal parsed messages). The
 * two kinds never compare equal.
 */
export async function wirePrefixHashes(
  wire: readonly unknown[],
  counts: readonly number[],
  turns: Turns | undefined,
  sent?: { raw: Buffer; ranges: readonly number[] },
): Promise<{ at: Map<number, string>; full: string }> {
  const at = new Map<number, string>();
  const cuts = [...new Set(counts)].filter((n) => n <= wire.length).sort((a, b) => a - b);
  if (sent && sent.ranges.length === 2 * wire.length && wire.length > 0) {
    const { raw, ranges } = sent;
    const h = createHash('sha256').update('bytes\n');
    let from = ranges[0]!;
    for (const n of cuts) {
      const cut = n === 0 ? from : ranges[2 * n - 1]!;
      at.set(n, h.update(raw.subarray(from, cut)).copy().digest('hex'));
      from = cut;
    }
    return { at, full: h.update(raw.subarray(from, ranges[2 * wire.length - 1])).digest('hex') };
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
 * The wire messages of one of a chat's recent bound requests, hashed, and the chat (or branch)
 * they are in.
 */
export interface PrefixEntry {
  wireCount: number;
  hash: string;
  /** How many logged messages of `chatId` those wire messages stand for. */
  loggedCount: number;
  chatId: string;
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

/** The recent prefixes of the most recently bound chats, newest first per chat. */
export class BoundPrefixes {
  private readonly byChat = new Map<string, PrefixEntry[]>();

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
  }

  /**
   * Notes a bound request's prefix first; after a compaction, the chat's earlier ones are gone.
   * Beyond the limit the most redundant earlier one goes (the one whose length is nearest another's),
   * so the lengths kept stay spread out and a late request still finds one shortly before its own.
   */
  remember(id: string, entry: PrefixEntry, compacted: boolean): void {
    const earlier = compacted ? [] : (this.byChat.get(id) ?? []);
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
    if (this.byChat.size > CHATS_KEPT) this.byChat.delete(this.byChat.keys().next().value as string);
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
 * request's prefixes at their lengths first when `hashes` lacks them (added to `hashes`). True when
 * it waited: the chat's remembered prefixes then hold that bind's.
 */
export async function awaitExtendedBind(
  pending: readonly PendingBind[],
  wire: readonly unknown[],
  hashes: Map<number, string>,
  from: number,
  turns: Turns | undefined,
  sent: { raw: Buffer; ranges: readonly number[] } | undefined,
): Promise<boolean> {
  if (pending.length === 0) return false;
  const counts = pending
    .map((p) => p.wireCount)
    .filter((n) => n > from && n <= wire.length && !hashes.has(n));
  if (counts.length > 0) {
    const more = await wirePrefixHashes(wire, counts, turns, sent);
    for (const [n, h] of more.at) hashes.set(n, h);
  }
  const ahead = longestVerified(pending, hashes, from);
  if (!ahead) return false;
  await ahead.done;
  return true;
}
