/**
 * What the file store (`store-file.ts`) holds in memory of its chats, bounded whatever their
 * number: the state of open chats (header, line offsets) for the `maxOpenChats` most recently used,
 * append handles for `maxOpenFiles`. A chat is opened (repaired, converted) on first use; one whose
 * file was found removed behind the store is forgotten and opened again.
 */
import { basename } from 'node:path';
import type { Clock } from '../lib/clock.ts';
import type { KeyedMutex } from './keyed-mutex.ts';
import { notFound } from './chat-id.ts';
import { openChatFile, type ChatFile, type SetAside } from './chat-file.ts';
import { AppendFile, type FsyncMode } from './append-file.ts';
import type { StoreLog } from './store-file.ts';

export interface OpenChatsOptions {
  /** The path of a chat's log file; refuses malformed ids. */
  pathOf: (id: string) => string;
  /** The store's appends by chat: a chat with one under way is not forgotten. */
  appendMutex: KeyedMutex;
  fsync: FsyncMode;
  maxOpenFiles: number;
  maxOpenChats: number;
  /** Names set-aside torn tails. */
  clock: Clock;
  log: StoreLog | undefined;
  /** A chat found absent when opened (a chat still listed whose file was removed by hand). */
  onAbsent: (id: string) => void;
  /**
   * A reader beside a gateway (`FileLogBackendOptions.indexCheck: 'when-owner-exited'`): chats are
   * opened without setting a torn last line aside (`OpenFileOptions.leavingTornTails`).
   */
  leavingTornTails?: boolean;
}

/** A chat in memory: its opening, and its state once opened. */
interface OpenChat {
  opening: Promise<ChatFile | undefined>;
  file?: ChatFile;
}

/** A chat file removed while it was open. */
export const removed = (err: unknown): boolean =>
  (err as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';

/** The file store's open chats and append handles, least recently used first; see the file comment. */
export class OpenChats {
  /** Open chats (line offsets, header), least recently used first. */
  private readonly open = new Map<string, OpenChat>();
  /** Append handles by chat, in least-recently-used order. */
  private readonly writers = new Map<string, AppendFile>();

  constructor(private readonly opts: OpenChatsOptions) {}

  /** Tells the operator what opening a chat set aside (a crash cut its last write short). */
  private reportSetAside(id: string, what: SetAside): void {
    const fields = { chatId: id, setAside: basename(what.path), bytes: what.bytes };
    if (what.kind === 'line') {
      this.opts.log?.('warn', 'chat log: a torn last line was set aside', { ...fields, events: what.events });
    } else {
      this.opts.log?.(
        'warn',
        'chat log: a chat file without a whole header was set aside; the chat starts anew',
        fields,
      );
    }
  }

  /** The chat's open state, opening (and indexing, repairing, converting) it on first use. */
  chat(id: string): Promise<ChatFile | undefined> {
    const known = this.open.get(id);
    if (known) {
      // Most recently used last.
      this.open.delete(id);
      this.open.set(id, known);
      return known.opening;
    }
    const path = this.opts.pathOf(id);
    const entry: OpenChat = {
      opening: openChatFile(id, path, this.opts.clock.now(), {
        onSetAside: (what) => this.reportSetAside(id, what),
        leavingTornTails: this.opts.leavingTornTails === true,
      }),
    };
    this.open.set(id, entry);
    entry.opening.then(
      (c) => {
        // An absent chat is not remembered: it may be created by another process later.
        if (c === undefined && this.open.get(id) === entry) this.open.delete(id);
        else entry.file = c;
        // A chat still listed whose file is gone (removed by hand) is listed no more.
        if (c === undefined) this.opts.onAbsent(id);
      },
      () => this.open.get(id) === entry && this.open.delete(id),
    );
    this.dropLeastUsed();
    return entry.opening;
  }

  /**
   * Forgets the least recently used chats beyond `maxOpenChats`. A chat still opening or with an
   * append under way stays (reopening it then could see a write in progress as a torn line).
   */
  private dropLeastUsed(): void {
    if (this.open.size <= this.opts.maxOpenChats) return;
    for (const [id, entry] of this.open) {
      if (this.open.size <= this.opts.maxOpenChats) return;
      if (!entry.file || this.opts.appendMutex.busy(id)) continue;
      this.open.delete(id);
    }
  }

  /** The chat's open state; a 404 when it does not exist. */
  async existing(id: string): Promise<ChatFile> {
    const c = await this.chat(id);
    if (!c) throw notFound(id);
    return c;
  }

  /** The state of chat `id` when it is open in memory. */
  file(id: string): ChatFile | undefined {
    return this.open.get(id)?.file;
  }

  has(id: string): boolean {
    return this.open.has(id);
  }

  /** Remembers a chat just created, as written (most recently used). */
  created(file: ChatFile): void {
    this.open.delete(file.id);
    this.open.set(file.id, { opening: Promise.resolve(file), file });
    this.dropLeastUsed();
  }

  /** Forgets chat `id`'s state: it is opened again on next use. */
  forget(id: string): void {
    this.open.delete(id);
  }

  /**
   * A read failed with `err`: if the chat's file was removed behind the store, forgets the chat's
   * state (once no append is under way) and opens it again: a 404 that drops its row, unless it
   * opens afresh (a converted chat's original is still there). Other errors are thrown as they are.
   */
  async reopenGone(id: string, c: ChatFile, err: unknown): Promise<ChatFile> {
    if (!removed(err)) throw err;
    await this.opts.appendMutex.run(id, async () => {
      if (this.open.get(id)?.file === c) this.open.delete(id);
      await this.dropWriter(id);
    });
    return this.existing(id);
  }

  /** The chat's append handle, opened on first use; the least recently used are closed past the cap. */
  writer(id: string, path: string): AppendFile {
    let w = this.writers.get(id);
    if (w && w.path !== path) {
      void w.close();
      w = undefined;
    }
    if (w) this.writers.delete(id);
    else w = new AppendFile(path, this.opts.fsync);
    this.writers.set(id, w);
    while (this.writers.size > this.opts.maxOpenFiles) {
      const [oldId, oldest] = this.writers.entries().next().value as [string, AppendFile];
      this.writers.delete(oldId);
      void oldest.close();
    }
    return w;
  }

  async dropWriter(id: string): Promise<void> {
    const w = this.writers.get(id);
    this.writers.delete(id);
    await w?.close().catch(() => undefined);
  }

  /** How many chats have state in memory, and how many append handles are open. */
  stats(): { openChats: number; openFiles: number } {
    return { openChats: this.open.size, openFiles: this.writers.size };
  }

  /** Closes every append handle and forgets every chat. */
  async close(): Promise<void> {
    await Promise.all([...this.writers.values()].map((w) => w.close().catch(() => undefined)));
    this.writers.clear();
    this.open.clear();
  }
}
