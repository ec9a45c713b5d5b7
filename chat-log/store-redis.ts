/**
 * The shared chat-log backend for several gateway replicas: everything a chat has lives in Redis.
 * Keys (all under `prefix`, default `oda:`):
 *   chats                   set of every chat id (for `list()` and rebuilding the activity index)
 *   activity                chats by last activity, for paged listing: a sorted set of members
 *                           `<last activity, 16 digits> <id>` (all score 0, ordered by text)
 *   activity:team:<team>    the same, for one team's chats
 *   chat:<id>:header        the header, as its JSON line
 *   chat:<id>:events        list of event JSON lines; index = seq, so LLEN is the count
 *   chat:<id>:last          time of the last append (lastActivityAt)
 *   chat:<id>:checkpoints   hash: read model name -> checkpoint JSON
 *   chat:<id>:lock          the cross-replica chat lock (see redis-lock.ts)
 * A batch is checked exactly like the file store does (event-batch.ts) before anything is sent,
 * then written by one script that first compares the list's length with the count the batch was
 * numbered from: two replicas can never interleave or duplicate, a loser renumbers and tries again.
 * The connection is set to fail fast (no offline queue, one retry, timeouts): while Redis is
 * unreachable every call is a 503 ODA_ERR_STORE_UNAVAILABLE within about a second, never a hang.
 */
import { Redis } from 'ioredis';
import { OdaError, isOdaError } from '../lib/errors.ts';
import {
  parseStoredCheckpoint,
  type AppendOptions,
  type ChatSummary,
  type EventLines,
  type LogBackend,
  type StoreStats,
  type StoredCheckpoint,
} from './store.ts';
import type { ChatCursor, ChatListQuery, ChatPage } from './chat-page.ts';
import type { Event, Header, NewEvent } from './format/current.ts';
import { headerAsCurrent } from './convert.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { assertChatId, isChatId, notFound } from './chat-id.ts';
import { headerLine, prepareBatch, prepareSeed, parseEventLine } from './event-batch.ts';
import { RedisLock } from './redis-lock.ts';

export interface RedisLogBackendOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...` */
  url: string;
  /** Prefix of every key, so several gateways (or tests) can share one Redis. Default `oda:`. */
  prefix?: string;
  /** How long a call waits for a (re)connection before answering 503. Default 1000 ms. */
  readyWaitMs?: number;
  /** TCP connect timeout. Default 2000 ms. */
  connectTimeoutMs?: number;
  /** A command without a reply in this time fails (a stalled Redis). Default 5000 ms. */
  commandTimeoutMs?: number;
  /** Lease of a chat lock, renewed while held. Default 10000 ms. */
  lockTtlMs?: number;
  /** How long a request waits for a chat's lock before a 503. Default 10000 ms. */
  lockWaitMs?: number;
  /** Told about the first connection error after each stretch of being connected. */
  onError?: (err: Error) => void;
  /** Progress of the activity index check (the gateway passes its logger). */
  log?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
}

const PREFIX_RE = /^[A-Za-z0-9._:{}-]{0,64}$/;

// KEYS: header, events, last, chats, activity[, team activity]; ARGV: id, header, last, member, events...
const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('DEL', KEYS[2])
for i = 5, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], 0, ARGV[4])
if KEYS[6] then redis.call('ZADD', KEYS[6], 0, ARGV[4]) end
return 1`;

// KEYS: header, events, last, activity[, team activity]; ARGV: count, now, id, events...
// The chat's activity member moves from its last time to now (both written by this code, as digits).
const APPEND = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local n = redis.call('LLEN', KEYS[2])
if n ~= tonumber(ARGV[1]) then return {0, n} end
for i = 4, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
local old = redis.call('GET', KEYS[3])
local member = string.rep('0', 16 - #ARGV[2]) .. ARGV[2] .. ' ' .. ARGV[3]
if old then
  local was = string.rep('0', 16 - #old) .. old .. ' ' .. ARGV[3]
  redis.call('ZREM', KEYS[4], was)
  if KEYS[5] then redis.call('ZREM', KEYS[5], was) end
end
redis.call('ZADD', KEYS[4], 0, member)
if KEYS[5] then redis.call('ZADD', KEYS[5], 0, member) end
redis.call('SET', KEYS[3], ARGV[2])
return {1, n + #ARGV - 3}`;

// Rebuilds activity members of the chats in ARGV[2..] (ARGV[1]: the key prefix), reading each
// chat's time and team in the script so a concurrent append cannot leave a stale member behind.
const REINDEX = `
local p = ARGV[1]
local added = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local h = redis.call('GET', p .. 'chat:' .. id .. ':header')
  if h then
    local ok, header = pcall(cjson.decode, h)
    local last = redis.call('GET', p .. 'chat:' .. id .. ':last')
    if ok and type(header) == 'table' and last then
      local member = string.rep('0', 16 - #last) .. last .. ' ' .. id
      added = added + redis.call('ZADD', p .. 'activity', 0, member)
      if type(header.team) == 'string' then
        redis.call('ZADD', p .. 'activity:team:' .. header.team, 0, member)
      end
    end
  end
end
return added`;

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

/** Members looked at in one window of a filtered listing, and at most in one listing. */
const LIST_WINDOW = 500;
const LIST_SCAN_BUDGET = 20_000;
/** Events fetched in one LRANGE of a streamed read. */
const READ_WINDOW = 100;

/** Headers kept in memory (they never change; the least recently used are read again when needed). */
const MAX_CACHED_HEADERS = 10_000;

/** Renumbering rounds an append may lose to other replicas before it gives up. */
const MAX_APPEND_ROUNDS = 100;

function unavailable(detail: string, cause?: unknown): OdaError {
  return new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, `the chat store (Redis) is unavailable: ${detail}`, {
    cause,
    headers: { 'retry-after': '1' },
  });
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Results of a MULTI, each checked for its own error. */
function results(replies: Array<[Error | null, unknown]> | null): unknown[] {
  if (!replies) throw unavailable('transaction aborted');
  return replies.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

/** Chat log state of every replica in one Redis; see the file comment. */
export class RedisLogBackend implements LogBackend {
  readonly prefix: string;
  private readonly redis: Redis;
  private readonly opts: Required<Omit<RedisLogBackendOptions, 'onError' | 'prefix' | 'url' | 'log'>>;
  private readonly log: RedisLogBackendOptions['log'];
  private readonly appendMutex = new KeyedMutex();
  private readonly lockMutex = new KeyedMutex();
  private readonly lock: RedisLock;
  /** Headers never change once created, so each is read from Redis once (while it stays cached). */
  private readonly headers = new Map<string, Header>();
  private waitingForReady: Promise<boolean> | undefined;
  private errorReported = false;
  private closed = false;

  constructor(opts: RedisLogBackendOptions) {
    const prefix = opts.prefix ?? 'oda:';
    if (!PREFIX_RE.test(prefix)) {
      throw new OdaError('ODA_ERR_CONFIG', 500, 'redis key prefix must be 0-64 of A-Za-z0-9._:{}-');
    }
    this.prefix = prefix;
    this.log = opts.log;
    this.opts = {
      readyWaitMs: opts.readyWaitMs ?? 1000,
      connectTimeoutMs: opts.connectTimeoutMs ?? 2000,
      commandTimeoutMs: opts.commandTimeoutMs ?? 5000,
      lockTtlMs: opts.lockTtlMs ?? 10_000,
      lockWaitMs: opts.lockWaitMs ?? 10_000,
    };
    this.redis = new Redis(opts.url, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: this.opts.connectTimeoutMs,
      commandTimeout: this.opts.commandTimeoutMs,
      // Keep reconnecting (at most once a second) so the gateway recovers when Redis is back.
      retryStrategy: (times) => Math.min(100 * times, 1000),
    });
    this.redis.on('error', (err: Error) => {
      if (this.errorReported) return;
      this.errorReported = true;
      opts.onError?.(err);
    });
    this.redis.on('ready', () => {
      this.errorReported = false;
    });
    this.lock = new RedisLock((op) => this.run(op), {
      ttlMs: this.opts.lockTtlMs,
      waitMs: this.opts.lockWaitMs,
    });
  }

  private key(id: string, part: 'header' | 'events' | 'last' | 'checkpoints' | 'lock'): string {
    return `${this.prefix}chat:${id}:${part}`;
  }

  private get chatsKey(): string {
    return `${this.prefix}chats`;
  }

  private activityKey(team?: string): string {
    return team === undefined ? `${this.prefix}activity` : `${this.prefix}activity:team:${team}`;
  }

  /** Resolves true once connected, false when not connected within `readyWaitMs`. */
  private connected(): Promise<boolean> {
    if (this.redis.status === 'ready') return Promise.resolve(true);
    if (this.closed || this.redis.status === 'end') return Promise.resolve(false);
    this.waitingForReady ??= new Promise<boolean>((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        this.waitingForReady = undefined;
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), this.opts.readyWaitMs);
      this.redis.on('ready', onReady);
    });
    return this.waitingForReady;
  }

  /**
   * Runs one operation on the connection. Not connected, a dropped connection or a timeout is a
   * 503 ODA_ERR_STORE_UNAVAILABLE; errors Redis itself replies with (a bug) stay as they are.
   */
  async run<T>(op: (redis: Redis) => Promise<T>): Promise<T> {
    if (this.closed) throw unavailable('the store is closed');
    if (!(await this.connected())) throw unavailable(`not connected (${this.redis.status})`);
    try {
      return await op(this.redis);
    } catch (err) {
      if (isOdaError(err) || (err instanceof Error && err.name === 'ReplyError')) throw err;
      throw unavailable(err instanceof Error ? err.message : String(err), err);
    }
  }

  async create(header: Header, seed: readonly Event[] = []): Promise<'created' | 'exists'> {
    assertChatId(header.id);
    const line = headerLine(header).slice(0, -1);
    const prepared = prepareSeed(seed);
    const lastAt = prepared.events.at(-1)?.at ?? header.createdAt;
    const id = header.id;
    const teamKeys = header.team === undefined ? [] : [this.activityKey(header.team)];
    return this.appendMutex.run(id, async () => {
      const created = await this.run((r) =>
        r.eval(
          CREATE,
          5 + teamKeys.length,
          this.key(id, 'header'),
          this.key(id, 'events'),
          this.key(id, 'last'),
          this.chatsKey,
          this.activityKey(),
          ...teamKeys,
          id,
          line,
          String(lastAt),
          activityMember(lastAt, id),
          ...prepared.lines,
        ),
      );
      return created === 1 ? 'created' : 'exists';
    });
  }

  async header(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    const known = this.headers.get(id);
    if (known) {
      this.headers.delete(id);
      this.headers.set(id, known);
      return known;
    }
    const text = await this.run((r) => r.get(this.key(id, 'header')));
    if (text === null) return undefined;
    let parsed: Header;
    try {
      // A v4 chat reads as v5 in place: its events are valid v5 events as they are.
      const upgraded = headerAsCurrent(JSON.parse(text));
      if (upgraded === undefined) throw new Error('not a header of a version that reads as the current one');
      parsed = upgraded;
    } catch (err) {
      throw new OdaError('ODA_ERR_LOG_READ', 500, `chat log ${id} has a damaged header`, { cause: err });
    }
    this.headers.set(id, parsed);
    // Least recently used first: drop the oldest beyond the bound.
    if (this.headers.size > MAX_CACHED_HEADERS) this.headers.delete(this.headers.keys().next().value!);
    return parsed;
  }

  async append(
    id: string,
    events: readonly NewEvent[],
    now: number,
    expectedCount?: number,
    opts: AppendOptions = {},
  ): Promise<Event[]> {
    assertChatId(id);
    // The team's activity set moves with the chat (the header is cached: usually no round trip).
    const team = (await this.header(id))?.team;
    const teamKeys = team === undefined ? [] : [this.activityKey(team)];
    // In process, appends of one chat queue here; across replicas the script's count check decides.
    return this.appendMutex.run(id, async () => {
      for (let round = 0; round < MAX_APPEND_ROUNDS; round++) {
        const count = expectedCount ?? (await this.count(id));
        const batch = prepareBatch(events, count, now, opts.built);
        if (batch.events.length === 0) return [];
        const reply = await this.run((r) =>
          r.eval(
            APPEND,
            4 + teamKeys.length,
            this.key(id, 'header'),
            this.key(id, 'events'),
            this.key(id, 'last'),
            this.activityKey(),
            ...teamKeys,
            String(count),
            String(now),
            id,
            ...batch.lines,
          ),
        );
        const [status] = reply as [number, number];
        if (status === 1) return batch.events;
        if (status === -1) throw notFound(id);
        // A caller that compared under the lock must not append to a log that moved on.
        if (expectedCount !== undefined) {
          throw unavailable(`chat ${id} changed while it was being appended to; retry`);
        }
        // Another replica appended after we counted: number the batch again from the new count.
      }
      throw unavailable(`chat ${id} kept changing under ${MAX_APPEND_ROUNDS} append attempts`);
    });
  }

  async read(id: string, offset: number, length?: number): Promise<Event[]> {
    assertChatId(id);
    if (length === 0) {
      await this.count(id);
      return [];
    }
    const end = length === undefined ? -1 : offset + length - 1;
    const [exists, lines] = await this.run(async (r) =>
      results(
        await r.multi().exists(this.key(id, 'header')).lrange(this.key(id, 'events'), offset, end).exec(),
      ),
    );
    if (exists !== 1) throw notFound(id);
    return (lines as string[]).map((line, i) => parseEventLine(line, id, offset + i));
  }

  async count(id: string): Promise<number> {
    assertChatId(id);
    const [exists, n] = await this.run(async (r) =>
      results(await r.multi().exists(this.key(id, 'header')).llen(this.key(id, 'events')).exec()),
    );
    if (exists !== 1) throw notFound(id);
    return n as number;
  }

  async list(): Promise<ChatSummary[]> {
    const ids = (await this.run((r) => r.smembers(this.chatsKey))).filter(isChatId).sort();
    if (ids.length === 0) return [];
    const replies = await this.run(async (r) => {
      const p = r.pipeline();
      for (const id of ids)
        p.get(this.key(id, 'header')).llen(this.key(id, 'events')).get(this.key(id, 'last'));
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
      out.push(summary);
    });
    return out;
  }

  /**
   * One page of chats, newest activity first, from the activity sets: one ZREVRANGEBYLEX window
   * (an id filter reads further windows, at most LIST_SCAN_BUDGET members, then answers with what
   * it found and a cursor where it stopped), then the page's headers and counts in one pipeline.
   */
  async listPage(q: ChatListQuery): Promise<ChatPage> {
    const indexing = this.activityRebuild(); // a first listing checks the sets against the chat set
    if ((await indexing.small) === true) await indexing.done;
    const key = this.activityKey(q.team);
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
      const members = await this.run((r) => r.zrevrangebylex(key, max, min, 'LIMIT', 0, want));
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
    const chats = await this.summaries(shown);
    const page: ChatPage = { chats };
    const last = shown[shown.length - 1];
    if (found.length > q.limit && last) page.next = last;
    else if (stoppedAt) page.next = stoppedAt;
    if (this.activityRebuilding) page.indexing = true;
    return page;
  }

  /** Summaries of listed chats: headers (cached) and counts in one pipeline; gone chats are skipped. */
  private async summaries(listed: readonly ChatCursor[]): Promise<ChatSummary[]> {
    if (listed.length === 0) return [];
    const replies = await this.run(async (r) => {
      const p = r.pipeline();
      for (const { id } of listed) p.get(this.key(id, 'header')).llen(this.key(id, 'events'));
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

  private activityCheck: { small: Promise<boolean | undefined>; done: Promise<void> } | undefined;
  private activityRebuilding = false;

  /**
   * Once per process: when the activity set does not hold every chat (chats created by a gateway
   * before paged listing), adds the missing ones in the background, 500 chats per script. `small`
   * resolves true when few enough are missing for a listing to wait, undefined when none are.
   */
  private activityRebuild(): { small: Promise<boolean | undefined>; done: Promise<void> } {
    if (this.activityCheck) return this.activityCheck;
    let small!: (v: boolean | undefined) => void;
    const smallP = new Promise<boolean | undefined>((resolve) => (small = resolve));
    const done = (async () => {
      const [chats, indexed] = await this.run(async (r) =>
        results(await r.multi().scard(this.chatsKey).zcard(this.activityKey()).exec()),
      );
      if (chats === indexed) return small(undefined);
      this.activityRebuilding = true;
      small((chats as number) <= 2000);
      this.log?.('info', 'chat activity index is incomplete: adding the missing chats', {
        chats,
        indexed,
      });
      let cursor = '0';
      let done = 0;
      do {
        const [next, ids] = await this.run((r) => r.sscan(this.chatsKey, cursor, 'COUNT', 500));
        cursor = next;
        const valid = ids.filter(isChatId);
        if (valid.length) await this.run((r) => r.eval(REINDEX, 0, this.prefix, ...valid));
        done += ids.length;
      } while (cursor !== '0' && !this.closed);
      this.log?.('info', 'chat activity index is up to date', { chats: done });
    })()
      .catch((err: unknown) => {
        small(undefined);
        // Checked again by the next process (or a later listing after a failure).
        this.activityCheck = undefined;
        this.log?.('warn', 'chat activity index check failed', {
          error: err instanceof Error ? err.message : String(err),
        });
      })
      .finally(() => {
        this.activityRebuilding = false;
      });
    this.activityCheck = { small: smallP, done };
    return this.activityCheck;
  }

  /** Starts the activity-set check in the background (the gateway calls it at start). */
  openIndex(): void {
    void this.activityRebuild();
  }

  /**
   * Stored event lines from `offset` by LRANGE windows of READ_WINDOW events, each checked: at most
   * `maxEvents` and `maxBytes` of lines (a first line alone may be larger).
   */
  async readLines(id: string, offset: number, maxEvents: number, maxBytes: number): Promise<EventLines> {
    const count = await this.count(id);
    const end = Math.min(count, offset + maxEvents);
    const key = this.key(id, 'events');
    const run = this.run.bind(this);
    async function* lines(): AsyncGenerator<string> {
      let bytes = 0;
      for (let from = offset; from < end; from += READ_WINDOW) {
        const to = Math.min(end, from + READ_WINDOW) - 1;
        const window = await run((r) => r.lrange(key, from, to));
        for (let i = 0; i < window.length; i++) {
          const line = window[i]!;
          bytes += Buffer.byteLength(line) + 1;
          if (from + i > offset && bytes > maxBytes) return;
          parseEventLine(line, id, from + i);
          yield line;
        }
        if (window.length < to - from + 1) return;
      }
    }
    return { count, lines: lines() };
  }

  /** Headers held in memory and chats in the activity index. */
  stats(): StoreStats {
    return { openChats: this.headers.size, indexing: this.activityRebuilding };
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    assertChatId(id);
    // Holders in this process queue locally, so only one of them at a time polls Redis.
    return this.lockMutex.run(id, () => this.lock.hold(this.key(id, 'lock'), `chat ${id}`, fn));
  }

  async getCheckpoint(id: string, model: string): Promise<StoredCheckpoint | undefined> {
    assertChatId(id);
    assertChatId(model, 'read model name');
    const text = await this.run((r) => r.hget(this.key(id, 'checkpoints'), model));
    if (text === null) return undefined;
    return parseStoredCheckpoint(text, model);
  }

  async putCheckpoint(id: string, checkpoint: StoredCheckpoint): Promise<void> {
    assertChatId(id);
    assertChatId(checkpoint.model, 'read model name');
    await this.run((r) => r.hset(this.key(id, 'checkpoints'), checkpoint.model, JSON.stringify(checkpoint)));
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.run((r) => r.ping())) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.appendMutex.idle();
    this.closed = true;
    if (this.redis.status === 'ready') {
      await this.redis.quit().catch(() => this.redis.disconnect());
    } else {
      this.redis.disconnect();
    }
  }
}
