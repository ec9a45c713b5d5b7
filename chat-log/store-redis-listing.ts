/**
 * How the Redis chat store (`store-redis.ts`) lists chats: every chat from the chat set, or one page
 * from an activity set (the members it orders chats by, the cursor each member stands for, the scan
 * for one page and the page's summaries). Kept apart so the ordering and cursor rules read in one place.
 */
import type { ChatSummary } from './store.ts';
import type { ChatCursor, ChatListQuery } from './chat-page.ts';
import { headerAsCurrent } from './convert.ts';
import { isChatId, NARROW_PREFIX, prefixEnd } from './chat-id.ts';
import type { RedisRun } from './redis-lock.ts';
import { parseOrUndefined, results } from './store-redis-replies.ts';

/** The key of one part of a chat (see the key list in `store-redis-keys.ts`). */
type ChatKey = (id: string, part: 'header' | 'events' | 'last') => string;

/** Members looked at in one window of a filtered listing, and at most in one listing. */
const LIST_WINDOW = 500;
const LIST_SCAN_BUDGET = 20_000;

/** The activity member of a chat last active at `at`: time first (fixed width), so text order is time order. */
export function activityMember(at: number, id: string): string {
  return `${String(at).padStart(16, '0')} ${id}`;
}

function memberCursor(member: string): ChatCursor | undefined {
  const space = member.indexOf(' ');
  const at = Number(member.slice(0, space));
  const id = member.slice(space + 1);
  return space === 16 && Number.isSafeInteger(at) && isChatId(id) ? { lastActivityAt: at, id } : undefined;
}

/** The chats one page shows and, when there are more, the cursor the next page starts after. */
export interface ActivityScan {
  shown: ChatCursor[];
  next?: ChatCursor;
}

/**
 * One page of chats from the activity set `key`, newest activity first: one ZREVRANGEBYLEX window
 * (an id filter reads further windows, at most LIST_SCAN_BUDGET members, then answers with what
 * it found and a cursor where it stopped).
 */
export async function scanActivity(run: RedisRun, key: string, q: ChatListQuery): Promise<ActivityScan> {
  const bounds = [
    q.after ? activityMember(q.after.lastActivityAt, q.after.id) : undefined,
    q.activeTo !== undefined ? String(q.activeTo).padStart(16, '0') : undefined,
  ].filter((b): b is string => b !== undefined);
  let max = bounds.length ? `(${bounds.sort()[0]!}` : '+';
  const min = q.activeFrom !== undefined ? `[${String(q.activeFrom).padStart(16, '0')}` : '-';
  const filtered = q.idPrefix !== undefined || q.idContains !== undefined;
  const found: ChatCursor[] = [];
  let scanned = 0;
  let stoppedAt: ChatCursor | undefined;
  for (;;) {
    const want = filtered ? LIST_WINDOW : q.limit + 1 - found.length;
    const members = await run((r) => r.zrevrangebylex(key, max, min, 'LIMIT', 0, want));
    for (const m of members) {
      const c = memberCursor(m);
      scanned++;
      if (!c) continue;
      stoppedAt = c;
      const idOk =
        (q.idPrefix === undefined || c.id.startsWith(q.idPrefix)) &&
        (q.idContains === undefined || c.id.includes(q.idContains));
      if (idOk) found.push(c);
      if (found.length > q.limit) break;
    }
    if (found.length > q.limit || members.length < want) {
      stoppedAt = undefined;
      break;
    }
    if (scanned >= LIST_SCAN_BUDGET) break;
    max = `(${members[members.length - 1]!}`;
  }
  const shown = found.slice(0, q.limit);
  const scan: ActivityScan = { shown };
  const last = shown[shown.length - 1];
  if (found.length > q.limit && last) scan.next = last;
  else if (stoppedAt) scan.next = stoppedAt;
  return scan;
}

/**
 * One page of the chats under a narrow id prefix (at most NARROW_PREFIX chats, a session's), newest
 * activity first, from the id set `idsKey`: its ids in one ZRANGEBYLEX, their times (and, with a team
 * filter, their headers) in one pipeline, sorted here. Undefined when the prefix is broad (the
 * activity set finds a page sooner) or when the id set may lack chats (it does not count as many as
 * the chat set: an older gateway created some, or the rebuild is adding them): then the caller scans
 * the activity set, which holds them.
 */
export async function scanIdPrefix(
  run: RedisRun,
  key: ChatKey,
  keys: { chats: string; ids: string },
  q: ChatListQuery & { idPrefix: string },
): Promise<ActivityScan | undefined> {
  const end = prefixEnd(q.idPrefix);
  if (end === undefined) return undefined;
  const [chats, indexed, ids] = (await run(async (r) =>
    results(
      await r
        .multi()
        .scard(keys.chats)
        .zcard(keys.ids)
        .zrangebylex(keys.ids, `[${q.idPrefix}`, `(${end}`, 'LIMIT', 0, NARROW_PREFIX + 1)
        .exec(),
    ),
  )) as [number, number, string[]];
  if (chats !== indexed || ids.length > NARROW_PREFIX) return undefined;
  const candidates = ids.filter(
    (id) => isChatId(id) && (q.idContains === undefined || id.includes(q.idContains)),
  );
  if (candidates.length === 0) return { shown: [] };
  const replies = await run(async (r) => {
    const p = r.pipeline();
    for (const id of candidates) {
      p.get(key(id, 'last'));
      if (q.team !== undefined) p.get(key(id, 'header'));
    }
    return results(await p.exec());
  });
  // The same bounds as the activity scan's, on the same members: activity in [activeFrom, activeTo)
  // and, with a cursor, strictly older than it.
  const below = [
    q.after ? activityMember(q.after.lastActivityAt, q.after.id) : undefined,
    q.activeTo !== undefined ? String(q.activeTo).padStart(16, '0') : undefined,
  ].filter((b): b is string => b !== undefined);
  const from = q.activeFrom !== undefined ? String(q.activeFrom).padStart(16, '0') : undefined;
  const stride = q.team === undefined ? 1 : 2;
  const found: Array<{ member: string; cursor: ChatCursor }> = [];
  candidates.forEach((id, i) => {
    const last = replies[i * stride] as string | null;
    const at = last === null ? NaN : Number(last);
    if (!Number.isSafeInteger(at)) return;
    if (q.team !== undefined) {
      const text = replies[i * stride + 1] as string | null;
      const h = text === null ? undefined : headerAsCurrent(parseOrUndefined(text));
      if (h?.team !== q.team) return;
    }
    const member = activityMember(at, id);
    if (below.some((b) => member >= b) || (from !== undefined && member < from)) return;
    found.push({ member, cursor: { lastActivityAt: at, id } });
  });
  found.sort((a, b) => (a.member < b.member ? 1 : a.member > b.member ? -1 : 0));
  const shown = found.slice(0, q.limit).map((f) => f.cursor);
  const scan: ActivityScan = { shown };
  if (found.length > q.limit) scan.next = shown[shown.length - 1]!;
  return scan;
}

/** Every chat in the chat set, by id, with its last activity; chats without a readable header are skipped. */
export async function allSummaries(run: RedisRun, key: ChatKey, chatsKey: string): Promise<ChatSummary[]> {
  const ids = (await run((r) => r.smembers(chatsKey))).filter(isChatId).sort();
  if (ids.length === 0) return [];
  const replies = await run(async (r) => {
    const p = r.pipeline();
    for (const id of ids) p.get(key(id, 'header')).llen(key(id, 'events')).get(key(id, 'last'));
    return results(await p.exec());
  });
  const out: ChatSummary[] = [];
  ids.forEach((id, i) => {
    const [text, count, last] = replies.slice(i * 3, i * 3 + 3) as [string | null, number, string | null];
    if (text === null) return;
    const h = headerAsCurrent(parseOrUndefined(text));
    if (h === undefined || h.id !== id) return;
    const summary: ChatSummary = {
      id,
      createdAt: h.createdAt,
      eventCount: count,
      lastActivityAt: last === null ? h.createdAt : Number(last),
    };
    if (h.parent !== undefined) summary.parent = h.parent;
    if (h.team !== undefined) summary.team = h.team;
    if (h.cwd !== undefined) summary.cwd = h.cwd;
    out.push(summary);
  });
  return out;
}

/** Summaries of listed chats: headers and counts read in one pipeline; gone chats are skipped. */
export async function listedSummaries(
  run: RedisRun,
  key: ChatKey,
  listed: readonly ChatCursor[],
): Promise<ChatSummary[]> {
  if (listed.length === 0) return [];
  const replies = await run(async (r) => {
    const p = r.pipeline();
    for (const { id } of listed) p.get(key(id, 'header')).llen(key(id, 'events'));
    return results(await p.exec());
  });
  const out: ChatSummary[] = [];
  listed.forEach(({ id, lastActivityAt }, i) => {
    const [text, count] = replies.slice(i * 2, i * 2 + 2) as [string | null, number];
    const h = text === null ? undefined : headerAsCurrent(parseOrUndefined(text));
    if (h === undefined || h.id !== id) return;
    const summary: ChatSummary = { id, createdAt: h.createdAt, eventCount: count, lastActivityAt };
    if (h.parent !== undefined) summary.parent = h.parent;
    if (h.team !== undefined) summary.team = h.team;
    if (h.cwd !== undefined) summary.cwd = h.cwd;
    out.push(summary);
  });
  return out;
}
