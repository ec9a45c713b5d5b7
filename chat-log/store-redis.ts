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
 * The connection fails fast (while Redis is unreachable every call is a 503
 * ODA_ERR_STORE_UNAVAILABLE within about a second, never a hang) and never resends a command whose
 * reply was lost; the store's own operations are safe to run again and are, once reconnected (an
 * append recognises its batch already stored), see store-redis-connection.ts.
 * Its parts: the connection, the Lua scripts, the listings and the activity index rebuild are in
 * store-redis-*.ts.
 */
import { OdaError } from '../lib/errors.ts';
import {
  parseStoredCheckpoint,
  type AppendOptions,
  type ChatSummary,
  type EventLines,
  type LogBackend,
  type StoreStats,
  type StoredCheckpoint,
} from './store.ts';
import type { ChatListQuery, ChatPage } from './chat-page.ts';
import type { Event, Header, NewEvent } from './format/current.ts';
import { headerAsCurrent } from './convert.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { assertChatId, isChatId, notFound } from './chat-id.ts';
import { headerLine, prepareBatch, prepareSeed, parseEventLine } from './event-batch.ts';
import { RedisLock } from './redis-lock.ts';
import { APPEND, CREATE } from './store-redis-scripts.ts';
import { results, unavailable } from './store-redis-replies.ts';
import { olderCheckpointNames } from './checkpoints.ts';
import { RedisConnection, type RedisOp } from './store-redis-connection.ts';
import { activityMember, allSummaries, listedSummaries, scanActivity } from './store-redis-listing.ts';
import { RedisActivityRebuild } from './store-redis-activity-rebuild.ts';

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
  /**
   * How long a request waits for a chat's lock before a 503; never less than the lease and a
   * margin, so the lock of a replica killed while holding it is always outwaited. Default 10000 ms,
   * which the default lease raises to 12000 ms.
   */
  lockWaitMs?: number;
  /** Told about the first connection error after each stretch of being connected. */
  onError?: (err: Error) => void;
  /** Progress of the activity index check (the gateway passes its logger). */
  log?: (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;
  /**
   * A reader beside running gateways (the command line): never writes and never takes a lock (a
   * write or lock is refused), and its listings leave the activity sets' check to the gateways.
   */
  readOnly?: boolean;
}

const PREFIX_RE = /^[A-Za-z0-9._:{}-]{0,64}$/;

/** Events fetched in one LRANGE of a streamed read. */
const READ_WINDOW = 100;

/** Headers kept in memory (they never change; the least recently used are read again when needed). */
const MAX_CACHED_HEADERS = 10_000;

/** Renumbering rounds an append may lose to other replicas before it gives up. */
const MAX_APPEND_ROUNDS = 100;

/** Chat log state of every replica in one Redis; see the file comment. */
export class RedisLogBackend implements LogBackend {
  readonly prefix: string;
  private readonly connection: RedisConnection;
  private readonly opts: Required<
    Omit<RedisLogBackendOptions, 'onError' | 'prefix' | 'url' | 'log' | 'readOnly'>
  >;
  private readonly readOnly: boolean;
  private readonly log: RedisLogBackendOptions['log'];
  private readonly appendMutex = new KeyedMutex();
  private readonly lockMutex = new KeyedMutex();
  private readonly lock: RedisLock;
  private readonly activity: RedisActivityRebuild;
  /** Headers never change once created, so each is read from Redis once (while it stays cached). */
  /** Headers read, with their stored text (a chat created anew under the same id has another). */
  private readonly headers = new Map<string, { header: Header; text: string }>();
  private closed = false;

  constructor(opts: RedisLogBackendOptions) {
    const prefix = opts.prefix ?? 'oda:';
    if (!PREFIX_RE.test(prefix)) {
      throw new OdaError('ODA_ERR_CONFIG', 500, 'redis key prefix must be 0-64 of A-Za-z0-9._:{}-');
    }
    this.prefix = prefix;
    this.log = opts.log;
    this.readOnly = opts.readOnly ?? false;
    this.opts = {
      readyWaitMs: opts.readyWaitMs ?? 1000,
      connectTimeoutMs: opts.connectTimeoutMs ?? 2000,
      commandTimeoutMs: opts.commandTimeoutMs ?? 5000,
      lockTtlMs: opts.lockTtlMs ?? 10_000,
      // Raised by the lock to the lease and a margin when shorter (redis-lock.ts).
      lockWaitMs: opts.lockWaitMs ?? 10_000,
    };
    this.connection = new RedisConnection({
      url: opts.url,
      readyWaitMs: this.opts.readyWaitMs,
      connectTimeoutMs: this.opts.connectTimeoutMs,
      commandTimeoutMs: this.opts.commandTimeoutMs,
      onError: opts.onError,
    });
    this.lock = new RedisLock((op) => this.connection.runRepeatable(op), {
      ttlMs: this.opts.lockTtlMs,
      waitMs: this.opts.lockWaitMs,
    });
    this.activity = new RedisActivityRebuild({
      run: (op) => this.connection.runRepeatable(op),
      prefix,
      chatsKey: this.chatsKey,
      activityKey: this.activityKey(),
      log: this.log,
      closed: () => this.closed,
    });
  }

  /** Refuses `what` on a read-only store. */
  private writing(what: string): void {
    if (this.readOnly) throw new OdaError('ODA_ERR_INTERNAL', 500, `read-only Redis store: cannot ${what}`);
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

  /**
   * Runs one operation once (for the gateway's other Redis users: rate limits, usage, response
   * owners). Not connected, a dropped connection or a timeout is a 503 ODA_ERR_STORE_UNAVAILABLE;
   * errors Redis itself replies with (a bug) stay as they are.
   */
  run<T>(op: RedisOp<T>): Promise<T> {
    return this.connection.run(op);
  }

  /** Runs one of the store's own operations, each safe to run again after a lost reply. */
  private repeatable<T>(op: RedisOp<T>): Promise<T> {
    return this.connection.runRepeatable(op);
  }

  async create(header: Header, seed: readonly Event[] = []): Promise<'created' | 'exists'> {
    this.writing('create a chat');
    assertChatId(header.id);
    const line = headerLine(header).slice(0, -1);
    const prepared = prepareSeed(seed);
    const lastAt = prepared.events.at(-1)?.at ?? header.createdAt;
    const id = header.id;
    const teamKeys = header.team === undefined ? [] : [this.activityKey(header.team)];
    return this.appendMutex.run(id, async () => {
      const created = await this.repeatable((r, repeat) =>
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
          repeat ? '1' : '0',
          ...prepared.lines,
        ),
      );
      if (created !== 1) return 'exists';
      this.headers.delete(id); // one of a chat of this id that is gone is no longer the header
      return 'created';
    });
  }

  /**
   * The 404 of a chat whose header key is missing. Its cached header goes too: the chat's keys were
   * deleted or lost while it was known, and a chat of that id may be created anew.
   */
  private gone(id: string): OdaError {
    this.headers.delete(id);
    return notFound(id);
  }

  async header(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    const known = this.headers.get(id);
    if (known) {
      this.headers.delete(id);
      this.headers.set(id, known);
      return known.header;
    }
    const text = await this.repeatable((r) => r.get(this.key(id, 'header')));
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
    this.headers.set(id, { header: parsed, text });
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
    this.writing('append');
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
        // A repeat after a lost reply finds the batch when its first run stored it (the script).
        const reply = await this.repeatable((r, repeat) =>
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
            repeat ? '1' : '0',
            ...batch.lines,
          ),
        );
        const [status] = reply as [number, number];
        if (status === 1 || status === 2) return batch.events;
        if (status === -1) throw this.gone(id);
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
    const [exists, lines] = await this.repeatable(async (r) =>
      results(
        await r.multi().exists(this.key(id, 'header')).lrange(this.key(id, 'events'), offset, end).exec(),
      ),
    );
    if (exists !== 1) throw this.gone(id);
    return (lines as string[]).map((line, i) => parseEventLine(line, id, offset + i));
  }

  /**
   * The chat's event count. The header comes along: when it is not the one this process read (the
   * chat's keys were lost and another replica created it anew), the chat this process knew is gone
   * as well: a 404 that makes the models drop what they hold and read the new chat from its start.
   */
  async count(id: string): Promise<number> {
    assertChatId(id);
    const [text, n] = await this.repeatable(async (r) =>
      results(await r.multi().get(this.key(id, 'header')).llen(this.key(id, 'events')).exec()),
    );
    if (text === null) throw this.gone(id);
    const known = this.headers.get(id);
    if (known !== undefined && known.text !== text) throw this.gone(id);
    return n as number;
  }

  async list(): Promise<ChatSummary[]> {
    return allSummaries(this.repeatable.bind(this), (id, part) => this.key(id, part), this.chatsKey);
  }

  /**
   * One page of chats, newest activity first, from the activity sets: one ZREVRANGEBYLEX window
   * (an id filter reads further windows, at most LIST_SCAN_BUDGET members, then answers with what
   * it found and a cursor where it stopped), then the page's headers and counts in one pipeline.
   */
  async listPage(q: ChatListQuery): Promise<ChatPage> {
    if (!this.readOnly) {
      const indexing = this.activity.start(); // a first listing checks the sets against the chat set
      if ((await indexing.small) === true) await indexing.done;
    }
    const run = this.repeatable.bind(this);
    const { shown, next } = await scanActivity(run, this.activityKey(q.team), q);
    const chats = await listedSummaries(run, (id, part) => this.key(id, part), shown);
    const page: ChatPage = { chats };
    if (next) page.next = next;
    if (this.activity.rebuilding) page.indexing = true;
    return page;
  }

  /** Starts the activity-set check in the background (the gateway calls it at start). */
  openIndex(): void {
    if (!this.readOnly) void this.activity.start();
  }

  /**
   * Chats not yet in the activity set (created by a gateway before paged listing): listings miss
   * them until a gateway's check adds them. Read only.
   */
  async unindexedChats(): Promise<number> {
    const [chats, indexed] = await this.repeatable(async (r) =>
      results(await r.multi().scard(this.chatsKey).zcard(this.activityKey()).exec()),
    );
    return Math.max(0, (chats as number) - (indexed as number));
  }

  /**
   * Stored event lines from `offset` by LRANGE windows of READ_WINDOW events, each checked: at most
   * `maxEvents` and `maxBytes` of lines (a first line alone may be larger).
   */
  async readLines(id: string, offset: number, maxEvents: number, maxBytes: number): Promise<EventLines> {
    const count = await this.count(id);
    const end = Math.min(count, offset + maxEvents);
    const key = this.key(id, 'events');
    const run = this.repeatable.bind(this);
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
    return { openChats: this.headers.size, indexing: this.activity.rebuilding };
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    this.writing('take a chat lock');
    assertChatId(id);
    // Holders in this process queue locally, so only one of them at a time polls Redis.
    return this.lockMutex.run(id, () => this.lock.hold(this.key(id, 'lock'), `chat ${id}`, fn));
  }

  async getCheckpoint(id: string, model: string): Promise<StoredCheckpoint | undefined> {
    assertChatId(id);
    assertChatId(model, 'read model name');
    const text = await this.repeatable((r) => r.hget(this.key(id, 'checkpoints'), model));
    if (text === null) return undefined;
    return parseStoredCheckpoint(text, model);
  }

  async putCheckpoint(id: string, checkpoint: StoredCheckpoint): Promise<void> {
    this.writing('store a checkpoint');
    assertChatId(id);
    assertChatId(checkpoint.model, 'read model name');
    // The model's checkpoints of older versions go with it (no build reads them again).
    const key = this.key(id, 'checkpoints');
    const older = olderCheckpointNames(checkpoint.model);
    await this.repeatable(async (r) => {
      const write = r.multi().hset(key, checkpoint.model, JSON.stringify(checkpoint));
      results(await (older.length > 0 ? write.hdel(key, ...older) : write).exec());
    });
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.connection.run((r) => r.ping())) === 'PONG';
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.appendMutex.idle();
    this.closed = true;
    await this.connection.close();
  }
}
