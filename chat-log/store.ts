/**
 * The storage contract of the chat log. Two backends implement it: the file store (embedded
 * default, `store-file.ts`) and the Redis store (`store-redis.ts`, several replicas). Everything
 * above it (read models, checkpoints, the gateway) is written against this interface only.
 */
import type { Event, Header, NewEvent } from './format/current.ts';

import type { ChatListQuery, ChatPage, ChatSummary } from './chat-page.ts';

export type { ChatListQuery, ChatPage, ChatSummary } from './chat-page.ts';

/** Stored event lines, for reads streamed to a client (`readLines`). */
export interface EventLines {
  /** Events in the chat when the read began. */
  count: number;
  /** The JSON lines, in seq order from the read's offset, each checked before it is given. */
  lines: AsyncGenerator<string>;
}

/** What a backend holds in memory, for `/metrics`. */
export interface StoreStats {
  /** Chats whose state the backend keeps in memory. */
  openChats: number;
  /** Open file handles (file store). */
  openFiles?: number;
  /** Chats in the listing index. */
  indexedChats?: number;
  /** True while the listing index is being rebuilt. */
  indexing?: boolean;
}

/** A saved read-model state (see `checkpoints.ts`). */
export interface StoredCheckpoint {
  /** Read model name. */
  model: string;
  /** Log format version and gateway build the state was computed with. */
  formatVersion: number;
  build: string;
  /** Sequence number of the last event the state accounts for (-1: none). */
  position: number;
  state: unknown;
}

/** True when a stored value has the shape of a checkpoint (a damaged one is treated as absent). */
export function isStoredCheckpoint(v: unknown): v is StoredCheckpoint {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c.model === 'string' &&
    typeof c.formatVersion === 'number' &&
    typeof c.build === 'string' &&
    typeof c.position === 'number' &&
    Number.isSafeInteger(c.position) &&
    c.position >= -1 &&
    'state' in c
  );
}

/** A stored checkpoint's text read back, or undefined when it is damaged or of another model. */
export function parseStoredCheckpoint(text: string, model: string): StoredCheckpoint | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    // A damaged checkpoint is only a missed shortcut: the state is rebuilt from the log.
    return isStoredCheckpoint(parsed) && parsed.model === model ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** How an append checks its events. */
export interface AppendOptions {
  /**
   * The gateway built the events itself: they are checked for what their types cannot promise
   * (values that do not survive JSON) but not validated against the schema again.
   */
  built?: boolean;
}

export interface LogBackend {
  /** Creates a chat; `seed` events (a branched chat) are copied in first, keeping their order. */
  create(header: Header, seed?: readonly Event[]): Promise<'created' | 'exists'>;
  header(id: string): Promise<Header | undefined>;
  /**
   * The header of a chat whose log is found still stored, for a backend whose `header` answers from
   * memory without looking (the file store checks the chat's file: one stat); a chat found gone is
   * forgotten, as by a read that finds it so, and has none. Absent, `header` serves. For the reads
   * a person makes of a chat, never the model-call path.
   */
  checkedHeader?(id: string): Promise<Header | undefined>;
  /**
   * Appends a batch atomically, assigning contiguous `seq` from the current count and `at` = `now`.
   * Every value is checked to be losslessly JSON-serializable and valid against the v4 schema
   * first; a refused batch stores nothing. Returns the stored events. With `expectedCount`, the
   * batch is stored only if the chat still holds exactly that many events (a caller that compared
   * against that state under the chat's lock); otherwise nothing is stored and a 503 is thrown.
   */
  append(
    id: string,
    events: readonly NewEvent[],
    now: number,
    expectedCount?: number,
    opts?: AppendOptions,
  ): Promise<Event[]>;
  /** Events with `offset <= seq < offset + length` (length undefined: to the end). */
  read(id: string, offset: number, length?: number): Promise<Event[]>;
  /** Number of events (the next seq). */
  count(id: string): Promise<number>;
  /**
   * The number of events when the backend knows it without I/O because it is the chat's only
   * writer (the file store, for a chat open in memory); undefined otherwise. Lets the read models
   * skip catching up with a log nobody else appends to.
   */
  knownCount?(id: string): number | undefined;
  /** Every chat (for tools and tests; it grows with the chats: the gateway lists by page). */
  list(): Promise<ChatSummary[]>;
  /** One page of chats, newest activity first, from a lasting index (never one read per chat). */
  listPage(query: ChatListQuery): Promise<ChatPage>;
  /**
   * The stored lines of events from `offset` on, without holding the log in memory: at most
   * `maxEvents` events and `maxBytes` bytes of lines (a single larger event is given alone).
   */
  readLines(id: string, offset: number, maxEvents: number, maxBytes: number): Promise<EventLines>;
  stats(): StoreStats;
  /** Starts checking (and if need be rebuilding) the listing index in the background. */
  openIndex?(): void;
  /**
   * Runs `fn` while holding the chat's exclusive lock (across replicas for shared backends), so a
   * read-compare-append of one request is not interleaved with another request of the same chat.
   */
  withLock<T>(id: string, fn: () => Promise<T>): Promise<T>;
  getCheckpoint(id: string, model: string): Promise<StoredCheckpoint | undefined>;
  putCheckpoint(id: string, checkpoint: StoredCheckpoint): Promise<void>;
  /** True when the backend can serve (for `/readyz`). */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
