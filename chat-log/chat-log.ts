/**
 * The chat log as the gateway uses it: create chats, append events, read parts of a log, and get a
 * chat's read models (kept in memory, caught up from the backend, checkpointed). Written against
 * LogBackend only, so the file store and the Redis store serve it alike.
 */
import type { Clock } from '../lib/clock.ts';
import type { NormalizedMessage } from './pending-message.ts';
import type {
  AppendOptions,
  ChatListQuery,
  ChatPage,
  ChatSummary,
  EventLines,
  LogBackend,
  StoreStats,
} from './store.ts';
import { VERSION, type Event, type Header, type NewEvent } from './format/current.ts';
import type { AttachmentStore } from './attachments.ts';
import { validateHeader } from './header.ts';
import { assertChatId, notFound } from './chat-id.ts';
import { parseReadRange } from './read-range.ts';
import { storeImages } from './store-images.ts';
import { messageDigest, messageKey, type LogMessage, type MessageKey } from './message-digest.ts';
import { ChatModels, type ChatState } from './chat-models.ts';
import { chatModelKeys, chatReadModels, type ChatModelKey } from './read-models/chat-read-models.ts';
import type { Json } from './read-models/read-model.ts';

export type { ChatState } from './chat-models.ts';
export type { LogMessage, MessageKey } from './message-digest.ts';

export interface ChatLogOptions {
  backend: LogBackend;
  attachments: AttachmentStore;
  clock: Clock;
  /** The gateway build; checkpoints of another build are not reused. */
  build: string;
  /** Checkpoint a chat's read models every this many events (default 500) and on close. */
  checkpointEvery?: number;
  /** Chats whose read models stay in memory (default 1000, least recently used dropped). */
  maxCachedChats?: number;
}

/** Public read models paired with the position of the last event they account for (-1: none). */
export interface ChatSnapshot {
  position: number;
  values: Record<string, Json>;
}

function publicView<K extends ChatModelKey>(key: K, state: ChatState): Json {
  const model = chatReadModels[key];
  const value = state[key];
  return model.view ? model.view(value) : (JSON.parse(JSON.stringify(value)) as Json);
}

export class ChatLog {
  readonly backend: LogBackend;
  readonly attachments: AttachmentStore;
  private readonly clock: Clock;
  private readonly models: ChatModels;

  constructor(opts: ChatLogOptions) {
    this.backend = opts.backend;
    this.attachments = opts.attachments;
    this.clock = opts.clock;
    this.models = new ChatModels({
      backend: opts.backend,
      build: opts.build,
      checkpointEvery: opts.checkpointEvery ?? 500,
      maxChats: opts.maxCachedChats ?? 1000,
    });
  }

  /**
   * Creates a chat from header metadata, checked with the seed's messages (validateHeader). The
   * version and `createdAt` (now) are filled in when absent, top-level undefined members are
   * dropped, and a seeded chat gets `seeded` and `inheritedEvents` from its seed. An existing chat
   * is left as it is and its header returned.
   */
  async createChat(
    input: unknown,
    seed: readonly Event[] = [],
  ): Promise<{ status: 'created' | 'exists'; header: Header }> {
    let raw = input;
    if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
      const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
      const seeded = seed.length > 0 ? { seeded: true, inheritedEvents: seed.length } : {};
      raw = { version: VERSION, createdAt: this.clock.now(), ...seeded, ...given };
    }
    const header = validateHeader(raw);
    assertChatId(header.id);
    const status = await this.backend.create(header, seed);
    if (status === 'created') {
      if (seed.length === 0) this.models.created(header.id, header);
      return { status, header };
    }
    return { status, header: (await this.backend.header(header.id)) ?? header };
  }

  /** The chat's header and read models, caught up with its log; undefined when there is no such chat. */
  async open(id: string): Promise<ChatState | undefined> {
    assertChatId(id);
    return this.models.state(id);
  }

  /**
   * Appends events (stamped with the clock), folds them into the read models, returns them stored.
   * `opts.built`: the gateway built the events itself (not validated against the schema again).
   */
  async append(
    id: string,
    events: readonly NewEvent[],
    expectedCount?: number,
    opts?: AppendOptions,
  ): Promise<Event[]> {
    const stored = await this.backend.append(id, events, this.clock.now(), expectedCount, opts);
    await this.models.appended(id, stored);
    return stored;
  }

  /**
   * Runs `fn` holding the chat's lock (across replicas for a shared backend) with its caught-up
   * state, so one request's read-compare-append is not interleaved with another's. 404 when the
   * chat does not exist.
   */
  async withChat<T>(id: string, fn: (state: ChatState) => Promise<T>): Promise<T> {
    assertChatId(id);
    return this.backend.withLock(id, async () => {
      const state = await this.models.state(id);
      if (!state) throw notFound(id);
      return fn(state);
    });
  }

  /**
   * The log form of incoming messages, their inline images written as attachments: into the
   * folder of `team` (the chat's team), so teams never share a copy.
   */
  storeImages(messages: readonly NormalizedMessage[], team?: string): Promise<LogMessage[]> {
    return storeImages(this.attachments.forTeam(team), messages);
  }

  /** sha256 of the canonical JSON of a v4 message (role + content, images by content hash). */
  messageDigest(message: LogMessage): string {
    return messageDigest(message);
  }

  /** What the comparison with the log knows of a message: its digests and the item it refers to. */
  messageKey(message: LogMessage, refersTo?: string): MessageKey {
    return messageKey(message, refersTo);
  }

  /**
   * Events with `offset <= seq < offset + length`; offset defaults to 0 and length to the rest.
   * Both may be numbers or digit-only strings; anything else is a 400 with the seed's message.
   */
  async read(id: string, offset?: unknown, length?: unknown): Promise<Event[]> {
    const range = parseReadRange(offset, length);
    assertChatId(id);
    return this.backend.read(id, range.offset, range.length);
  }

  /** The public read models and the position they reflect. 404 when the chat does not exist. */
  async snapshot(id: string): Promise<ChatSnapshot> {
    const state = await this.open(id);
    if (!state) throw notFound(id);
    const values: Record<string, Json> = {};
    for (const key of chatModelKeys) {
      const model = chatReadModels[key];
      if (!model.internal) values[model.name] = publicView(key, state);
    }
    return { position: state.position, values };
  }

  header(id: string): Promise<Header | undefined> {
    return this.backend.header(id);
  }

  /**
   * The chat's header once the backend has found its log still stored (`LogBackend.checkedHeader`;
   * one stat on the file store), so a chat whose log was removed behind the gateway has none. For
   * the session reads a person makes; the model-call path uses `header`, which costs nothing.
   */
  checkedHeader(id: string): Promise<Header | undefined> {
    return this.backend.checkedHeader ? this.backend.checkedHeader(id) : this.backend.header(id);
  }

  list(): Promise<ChatSummary[]> {
    return this.backend.list();
  }

  /** One page of chats, newest activity first (`chat-page.ts`). */
  listPage(query: ChatListQuery): Promise<ChatPage> {
    return this.backend.listPage(query);
  }

  /**
   * Part of a log as its stored lines, for streaming to a client: offset and length are checked
   * like `read`'s, and at most `maxEvents` events and `maxBytes` bytes are given.
   */
  readLines(
    id: string,
    offset: unknown,
    length: unknown,
    maxEvents: number,
    maxBytes: number,
  ): Promise<EventLines> {
    const range = parseReadRange(offset, length);
    assertChatId(id);
    return this.backend.readLines(id, range.offset, Math.min(maxEvents, range.length ?? maxEvents), maxBytes);
  }

  /** Chats held in memory: read models here, and the backend's own counts. */
  stats(): StoreStats & { readModels: number } {
    return { ...this.backend.stats(), readModels: this.models.size };
  }

  ping(): Promise<boolean> {
    return this.backend.ping();
  }

  /** Resolves once the checkpoint saves started so far are done. */
  checkpointsSaved(): Promise<void> {
    return this.models.settled();
  }

  /** Checkpoints every read model in memory, then closes the backend. */
  async close(): Promise<void> {
    await this.models.flush();
    await this.backend.close();
  }
}
