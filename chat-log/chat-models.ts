/**
 * The in-memory read models of the chats in use. A chat's models are loaded on first use (from
 * fitting checkpoints, else from the log), then caught up by reading only the events after their
 * position, under a per-chat mutex so each event is folded exactly once and in order. States are
 * replaced, never modified, so a ChatState handed out earlier never changes under its holder.
 * Everything goes through LogBackend, so a shared backend (Redis) works unchanged: catching up
 * before every use is what shows a replica the events other replicas appended.
 */
import { isOdaError } from '../lib/errors.ts';
import type { LogBackend } from './store.ts';
import type { Event, Header } from './format/current.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { loadCheckpoint, saveCheckpoint } from './checkpoints.ts';
import { fold } from './read-models/read-model.ts';
import {
  chatModelKeys,
  chatReadModels,
  type ChatModelKey,
  type ChatModelStates,
} from './read-models/chat-read-models.ts';

/** A chat's header and read models, as of `position`. Immutable. */
export interface ChatState extends Readonly<ChatModelStates> {
  readonly id: string;
  readonly header: Header;
  /** Seq of the last event the models account for; -1 for an empty chat. */
  readonly position: number;
  /** Number of events accounted for (position + 1). */
  readonly count: number;
}

interface Entry {
  id: string;
  header: Header;
  position: number;
  /** The event at `position` (anchors checkpoints); undefined when not read in this process. */
  last: Event | undefined;
  states: ChatModelStates;
  /** Position of the last checkpoint saved (or loaded) for every model. */
  savedPosition: number;
  /** The state handed out for the current position (dropped whenever the models move). */
  state?: ChatState;
}

export interface ChatModelsOptions {
  backend: LogBackend;
  build: string;
  /** Save checkpoints once this many events were folded since the last save. */
  checkpointEvery: number;
  /** Chats kept in memory; the least recently used beyond this are dropped (checkpointed first). */
  maxChats: number;
}

const PAGE = 1000;

function applyTo<K extends ChatModelKey>(key: K, states: ChatModelStates, events: readonly Event[]): void {
  states[key] = fold(chatReadModels[key], states[key], events);
}

function setInitial<K extends ChatModelKey>(key: K, states: Partial<ChatModelStates>, header: Header): void {
  states[key] = chatReadModels[key].initial(header);
}

function initialStates(header: Header): ChatModelStates {
  const states: Partial<ChatModelStates> = {};
  for (const key of chatModelKeys) setInitial(key, states, header);
  return states as ChatModelStates;
}

export class ChatModels {
  private readonly opts: ChatModelsOptions;
  private readonly mutex = new KeyedMutex();
  private readonly entries = new Map<string, Entry>();
  private readonly saving = new Set<Promise<void>>();

  constructor(opts: ChatModelsOptions) {
    this.opts = opts;
  }

  /** Chats whose models are in memory. */
  get size(): number {
    return this.entries.size;
  }

  /** The chat's current state (loaded and caught up); undefined when the chat does not exist. */
  async state(id: string): Promise<ChatState | undefined> {
    // A chat whose backend is its only writer and says the models account for every event: nothing
    // to load or catch up with (no other process appends), so no turn through the mutex.
    const known = this.entries.get(id);
    if (known && !this.mutex.busy(id) && this.opts.backend.knownCount?.(id) === known.position + 1) {
      this.remember(known);
      return (known.state ??= stateOf(known));
    }
    return this.mutex.run(id, async () => {
      let entry = this.entries.get(id);
      if (entry && !(await this.caughtUp(entry))) entry = undefined;
      if (!entry) {
        entry = await this.load(id);
        if (!entry) return undefined;
      }
      this.remember(entry);
      this.maybeCheckpoint(entry);
      return (entry.state ??= stateOf(entry));
    });
  }

  /**
   * A chat this process has just created empty: its models start from their initial states, with
   * no checkpoint to look for (none can fit a log without events).
   */
  created(id: string, header: Header): void {
    // Only for a backend that is its chats' only writer: a shared one (Redis) loads as usual.
    if (!this.opts.backend.knownCount || this.entries.has(id) || this.mutex.busy(id)) return;
    const entry: Entry = {
      id,
      header,
      position: -1,
      last: undefined,
      states: initialStates(header),
      savedPosition: -1,
    };
    this.remember(entry);
  }

  /** Folds events just appended into the chat's models, when they are in memory. */
  async appended(id: string, stored: readonly Event[]): Promise<void> {
    const first = stored[0];
    const lastNew = stored[stored.length - 1];
    if (!first || !lastNew) return;
    const known = this.entries.get(id);
    if (known && !this.mutex.busy(id) && first.seq === known.position + 1) {
      // The events right after the models' position, with nothing else folding: fold them now.
      this.fold(known, stored, undefined);
      this.maybeCheckpoint(known);
      return;
    }
    await this.mutex.run(id, async () => {
      const entry = this.entries.get(id);
      if (!entry) return;
      if (first.seq === entry.position + 1) this.fold(entry, stored, undefined);
      else if (lastNew.seq > entry.position && !(await this.caughtUp(entry))) return;
      this.maybeCheckpoint(entry);
    });
  }

  /** Saves every state not yet checkpointed and waits for all saves. */
  async flush(): Promise<void> {
    for (const entry of this.entries.values()) this.checkpoint(entry);
    await this.settled();
  }

  /** Resolves once the saves started so far are done. */
  async settled(): Promise<void> {
    while (this.saving.size > 0) await Promise.all([...this.saving]);
  }

  private async load(id: string): Promise<Entry | undefined> {
    const { backend } = this.opts;
    const header = await backend.header(id);
    if (!header) return undefined;
    // A header remembered by the backend for a chat whose log has since gone: absent as well.
    const count = await backend.count(id).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (count === undefined) return undefined;
    const states = initialStates(header);
    const positions = {} as Record<ChatModelKey, number>;
    for (const key of chatModelKeys) {
      positions[key] = await this.loadOne(key, id, count, states);
    }
    const entry: Entry = {
      id,
      header,
      position: Math.min(...chatModelKeys.map((k) => positions[k])),
      last: undefined,
      states,
      savedPosition: 0,
    };
    entry.savedPosition = entry.position;
    // Models restored from checkpoints of different positions catch up together from the oldest.
    await this.readFrom(entry, positions);
    return entry;
  }

  private async loadOne<K extends ChatModelKey>(
    key: K,
    id: string,
    count: number,
    states: ChatModelStates,
  ): Promise<number> {
    const loaded = await loadCheckpoint(this.opts.backend, id, chatReadModels[key], this.opts.build, count);
    if (!loaded.ok) return -1;
    states[key] = loaded.state;
    return loaded.position;
  }

  /**
   * Catches the entry up; false (the entry forgotten) when its chat is no longer in the log: its
   * file removed, its Redis keys deleted or lost. The chat is then opened afresh, like any chat not
   * seen before (absent, it can be created again), instead of answering 404 until a restart.
   */
  private async caughtUp(entry: Entry): Promise<boolean> {
    try {
      await this.catchUp(entry);
      return true;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      if (this.entries.get(entry.id) === entry) this.entries.delete(entry.id);
      return false;
    }
  }

  private async catchUp(entry: Entry): Promise<void> {
    const count = await this.opts.backend.count(entry.id);
    if (count - 1 < entry.position) {
      // The log is shorter than what the models account for: they describe another log. Rebuild.
      entry.state = undefined;
      entry.states = initialStates(entry.header);
      entry.position = -1;
      entry.last = undefined;
      entry.savedPosition = -1;
    }
    if (count - 1 > entry.position) await this.readFrom(entry, undefined);
  }

  /** Reads and folds every event after the entry's position, page by page, to the end of the log. */
  private async readFrom(entry: Entry, positions: Record<ChatModelKey, number> | undefined): Promise<void> {
    for (;;) {
      const page = await this.opts.backend.read(entry.id, entry.position + 1, PAGE);
      if (page.length === 0) return;
      this.fold(entry, page, positions);
      if (page.length < PAGE) return;
    }
  }

  /** Applies events (in seq order, starting right after the entry's position) to fresh states. */
  private fold(
    entry: Entry,
    events: readonly Event[],
    positions: Record<ChatModelKey, number> | undefined,
  ): void {
    const next = { ...entry.states };
    const fresh: Event[] = [];
    for (const e of events) {
      if (e.seq !== entry.position + 1) continue; // already folded
      fresh.push(e);
      entry.position = e.seq;
      entry.last = e;
    }
    for (const key of chatModelKeys) {
      const mine = positions ? fresh.filter((e) => e.seq > positions[key]) : fresh;
      if (mine.length) applyTo(key, next, mine);
    }
    entry.states = next;
    if (fresh.length) entry.state = undefined;
  }

  private maybeCheckpoint(entry: Entry): void {
    if (entry.position - entry.savedPosition >= this.opts.checkpointEvery) this.checkpoint(entry);
  }

  /** Starts saving the entry's states when they moved since the last save. */
  private checkpoint(entry: Entry): void {
    const { position, states, last } = entry;
    if (position <= entry.savedPosition || last?.seq !== position) return;
    const previous = entry.savedPosition;
    entry.savedPosition = position;
    const { backend, build } = this.opts;
    const save = Promise.all(
      chatModelKeys.map((key) =>
        saveCheckpoint(backend, entry.id, chatReadModels[key], build, states[key], last),
      ),
    ).then(
      () => undefined,
      () => {
        // A checkpoint is only a shortcut; a failed save is retried at the next occasion.
        if (entry.savedPosition === position) entry.savedPosition = previous;
      },
    );
    this.saving.add(save);
    void save.finally(() => this.saving.delete(save));
  }

  /** Marks the entry most recently used and drops the least recently used beyond the limit. */
  private remember(entry: Entry): void {
    this.entries.delete(entry.id);
    this.entries.set(entry.id, entry);
    for (const [id, old] of this.entries) {
      if (this.entries.size <= this.opts.maxChats) break;
      this.checkpoint(old);
      this.entries.delete(id);
    }
  }
}

const isNotFound = (err: unknown): boolean => isOdaError(err) && err.code === 'ODA_ERR_NOT_FOUND';

function stateOf(entry: Entry): ChatState {
  return Object.freeze({
    id: entry.id,
    header: entry.header,
    position: entry.position,
    count: entry.position + 1,
    ...entry.states,
  });
}
