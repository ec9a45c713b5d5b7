/**
 * The shared chat-log backend for several gateway replicas: everything a chat has lives in Redis.
 * Its keys (all under `prefix`, default `oda:`) are listed in store-redis-keys.ts.
 * A batch is checked exactly like the file store does (event-batch.ts) before anything is sent,
 * then written by one script that first compares the list's length with the count the batch was
 * numbered from: two replicas can never interleave or duplicate, a loser renumbers and tries again.
 * The connection fails fast (while Redis is unreachable every call is a 503
 * ODA_ERR_STORE_UNAVAILABLE within about a second, never a hang) and never resends a command whose
 * reply was lost; the store's own operations are safe to run again and are, once reconnected (an
 * append recognises its batch already stored), see store-redis-connection.ts.
 * Its parts: the keys, the connection, the Lua scripts, the header cache, the streamed reads, the
 * checkpoints, the listings (with the activity index rebuild) are in store-redis-*.ts.
 */
import { OdaError, isOdaError } from '../lib/errors.ts';
import {
  type AppendOptions,
  type ChatSummary,
  type EventLines,
  type LogBackend,
  type StoreStats,
  type StoredCheckpoint,
} from './store.ts';
import type { ChatListQuery, ChatPage } from './chat-page.ts';
import type { Event, Header, NewEvent } from './format/current.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { assertChatId, isChatId, notFound } from './chat-id.ts';
import { headerLine, prepareBatch, prepareSeed, parseEventLine } from './event-batch.ts';
import { RedisLock } from './redis-lock.ts';
import { APPEND, CREATE } from './store-redis-scripts.ts';
import { results, unavailable } from './store-redis-replies.ts';
import { RedisConnection, type RedisOp } from './store-redis-connection.ts';
import { activityMember } from './store-redis-listing.ts';
import { RedisChatIndex } from './store-redis-index.ts';
import { RedisHeaders } from './store-redis-headers.ts';
import { eventLineWindows } from './store-redis-read-lines.ts';
import { getRedisCheckpoint, putRedisCheckpoint } from './store-redis-checkpoints.ts';
import { RedisKeys } from './store-redis-keys.ts';

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

/** Renumbering rounds an append may lose to other replicas before it gives up. */
const MAX_APPEND_ROUNDS = 100;

/** Chat log state of every replica in one Redis; see the file comment. */
export class RedisLogBackend implements LogBackend {
  readonly prefix: string;
  private readonly keys: RedisKeys;
  private readonly connection: RedisConnection;
  private readonly opts: Required<
    Omit<RedisLogBackendOptions, 'onError' | 'prefix' | 'url' | 'log' | 'readOnly'>
  >;
  private readonly readOnly: boolean;
  private readonly log: RedisLogBackendOptions['log'];
  private readonly appendMutex = new KeyedMutex();
  private readonly lockMutex = new KeyedMutex();
  private readonly lock: RedisLock;
  /** The listings and the activity-set check they rest on. */
  private readonly index: RedisChatIndex;
  /** Headers never change once created, so each is read from Redis once (while it stays cached). */
  private readonly headers: RedisHeaders;
  private closed = false;

  constructor(opts: RedisLogBackendOptions) {
    this.keys = new RedisKeys(opts.prefix ?? 'oda:');
    this.prefix = this.keys.prefix;
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
    this.index = new RedisChatIndex({
      run: (op) => this.connection.runRepeatable(op),
      keys: this.keys,
      readOnly: this.readOnly,
      log: this.log,
      closed: () => this.closed,
    });
    this.headers = new RedisHeaders(
      (op) => this.connection.runRepeatable(op),
      (id) => this.keys.chat(id, 'header'),
    );
  }

  /** Refuses `what` on a read-only store. */
  private writing(what: string): void {
    if (this.readOnly) throw new OdaError('ODA_ERR_INTERNAL', 500, `read-only Redis store: cannot ${what}`);
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
    const teamKeys = header.team === undefined ? [] : [this.keys.activity(header.team)];
    return this.appendMutex.run(id, async () => {
      const created = await this.repeatable((r, repeat) =>
        r.eval(
          CREATE,
          6 + teamKeys.length,
          this.keys.chat(id, 'header'),
          this.keys.chat(id, 'events'),
          this.keys.chat(id, 'last'),
          this.keys.chats,
          this.keys.ids,
          this.keys.activity(),
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
      this.headers.forget(id); // one of a chat of this id that is gone is no longer the header
      return 'created';
    });
  }

  /**
   * The 404 of a chat whose header key is missing. Its cached header goes too: the chat's keys were
   * deleted or lost while it was known, and a chat of that id may be created anew.
   */
  private gone(id: string): OdaError {
    this.headers.forget(id);
    return notFound(id);
  }

  async header(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    return this.headers.get(id);
  }

  /**
   * `header`, once the chat's keys are found still stored (`count`: one round trip, as a read makes):
   * a chat whose keys were lost (evicted, flushed, a failover to an empty replica) while its header
   * is held has none, as on the file store a chat whose file was removed; a chat created anew
   * meanwhile under the same id has its new header.
   */
  async checkedHeader(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    try {
      await this.count(id);
    } catch (err) {
      // Found gone (`gone` forgot the held header): the header is read again, absent or anew.
      if (!isOdaError(err) || err.code !== 'ODA_ERR_NOT_FOUND') throw err;
    }
    return this.header(id);
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
    const teamKeys = team === undefined ? [] : [this.keys.activity(team)];
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
            this.keys.chat(id, 'header'),
            this.keys.chat(id, 'events'),
            this.keys.chat(id, 'last'),
            this.keys.activity(),
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
        await r
          .multi()
          .exists(this.keys.chat(id, 'header'))
          .lrange(this.keys.chat(id, 'events'), offset, end)
          .exec(),
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
      results(await r.multi().get(this.keys.chat(id, 'header')).llen(this.keys.chat(id, 'events')).exec()),
    );
    if (text === null) throw this.gone(id);
    const known = this.headers.text(id);
    if (known !== undefined && known !== text) throw this.gone(id);
    return n as number;
  }

  /** Every chat in the chat set, by id (`RedisChatIndex.list`); for tools and tests. */
  list(): Promise<ChatSummary[]> {
    return this.index.list();
  }

  /** One page of chats from the activity sets, newest activity first (`RedisChatIndex.listPage`). */
  listPage(q: ChatListQuery): Promise<ChatPage> {
    return this.index.listPage(q);
  }

  /** Starts the activity-set check in the background (the gateway calls it at start). */
  openIndex(): void {
    this.index.openIndex();
  }

  /** Chats not yet in the activity set, which listings miss until a gateway adds them. Read only. */
  unindexedChats(): Promise<number> {
    return this.index.unindexedChats();
  }

  /**
   * Stored event lines from `offset` by LRANGE windows of READ_WINDOW events, each checked: at most
   * `maxEvents` and `maxBytes` of lines (a first line alone may be larger).
   */
  async readLines(id: string, offset: number, maxEvents: number, maxBytes: number): Promise<EventLines> {
    const count = await this.count(id);
    const end = Math.min(count, offset + maxEvents);
    const lines = eventLineWindows(
      this.repeatable.bind(this),
      this.keys.chat(id, 'events'),
      id,
      offset,
      end,
      maxBytes,
    );
    return { count, lines };
  }

  /** Headers held in memory and chats in the activity index. */
  stats(): StoreStats {
    return { openChats: this.headers.size, indexing: this.index.rebuilding };
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    this.writing('take a chat lock');
    assertChatId(id);
    // Holders in this process queue locally, so only one of them at a time polls Redis.
    return this.lockMutex.run(id, () => this.lock.hold(this.keys.chat(id, 'lock'), `chat ${id}`, fn));
  }

  getCheckpoint(id: string, model: string): Promise<StoredCheckpoint | undefined> {
    return getRedisCheckpoint(this.repeatable.bind(this), this.keys.chat(id, 'checkpoints'), id, model);
  }

  async putCheckpoint(id: string, checkpoint: StoredCheckpoint): Promise<void> {
    this.writing('store a checkpoint');
    await putRedisCheckpoint(this.repeatable.bind(this), this.keys.chat(id, 'checkpoints'), id, checkpoint);
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
