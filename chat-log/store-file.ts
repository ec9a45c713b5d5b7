/**
 * The embedded chat-log backend: one append-only JSONL file per chat under `dataDir/chats/`
 * (line 1 the header, then one event per line), checkpoints as small JSON files under
 * `dataDir/checkpoints/<id>/`, and a lasting chat index for listing (`chat-index.ts`,
 * `dataDir/chat-index.sqlite`). Appends of one chat are serialised in process and written with one
 * write plus datasync; a torn last line left by a crash is set aside when the file is next opened.
 *
 * Memory is bounded whatever the number of chats: the state of open chats (line offsets, header)
 * is kept for the `maxOpenChats` most recently used ones, append handles for `maxOpenFiles`
 * (`file-open-chats.ts`).
 *
 * The index's upkeep and the listings are in `store-file-index.ts`, reads of event ranges in
 * `file-read-events.ts` (noticing a file removed behind the store: `file-checked-reads.ts`), the
 * synced temporary-file writes in `file-write-temp.ts`.
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { OdaError } from '../lib/errors.ts';
import { systemClock, type Clock } from '../lib/clock.ts';
import {
  type AppendOptions,
  type ChatSummary,
  type EventLines,
  type LogBackend,
  type StoreStats,
  type StoredCheckpoint,
} from './store.ts';
import type { Event, Header, NewEvent } from './format/current.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { ChatRemoved, isChatId, pathInside } from './chat-id.ts';
import { batchBytes, headerLine, prepareBatch, prepareSeed } from './event-batch.ts';
import type { ChatFile } from './chat-file.ts';
import { SYNC_DELAY_MS, type FsyncMode } from './append-file.ts';
import { rowOfOpenChat, type RebuildSource } from './chat-index-rebuild.ts';
import type { ChatListQuery, ChatPage } from './chat-page.ts';
import { StoreFileIndex } from './store-file-index.ts';
import { checkedHeader, checkedRead, checkedReadLines } from './file-checked-reads.ts';
import { createWhole, syncDir, writeTemp } from './file-write-temp.ts';
import { CreationSync } from './creation-sync.ts';
import { readCheckpointFile, removeOlderCheckpointFiles, writeCheckpointFile } from './file-checkpoints.ts';
import { claimDataDir, type DataDirClaim } from './data-dir-claim.ts';
import { OpenChats, removed } from './file-open-chats.ts';

/** What the file store tells the operator (`IndexLog` with a level for housekeeping). */
export type StoreLog = (
  level: 'debug' | 'info' | 'warn',
  message: string,
  fields: Record<string, unknown>,
) => void;

export interface FileLogBackendOptions {
  dataDir: string;
  /** When an append is acknowledged: after fdatasync (`always`) or after the write (`batch`, default). */
  fsync?: FsyncMode;
  /** Append handles kept open at most; the least recently used beyond this are closed. */
  maxOpenFiles?: number;
  /** Chats whose state (header, line offsets) stays in memory; the least recently used are dropped. */
  maxOpenChats?: number;
  /**
   * When the chat index found not closed cleanly is brought up to date: always (the gateway, the
   * index's only writer), or only when the process that left it is gone (a command-line reader
   * next to a running gateway). One closed cleanly is checked against the chat files' names. A
   * reader (`when-owner-exited`) never sets a torn last line aside when it opens a chat (an older
   * log's, to index it): a gateway may start at any time after the reader looked for one, and its
   * append under way looks just like a torn line; cutting it would lose what that gateway writes.
   */
  indexCheck?: 'always' | 'when-owner-exited';
  /**
   * Progress of index rebuilds, torn tails set aside, housekeeping that failed (the gateway passes
   * its logger).
   */
  log?: StoreLog;
  /** Names set-aside torn tails; defaults to the system clock. */
  clock?: Clock;
  /**
   * Take `dataDir` for this process (`data-dir-claim.ts`), as a gateway does: the constructor throws
   * `DataDirInUseError` when another running gateway holds it; `close` releases it. Readers beside a
   * gateway and tests leave it off.
   */
  claim?: boolean;
}

const changedUnder = (id: string) =>
  new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, `chat ${id} changed while it was being appended to; retry`);

/** One JSONL file per chat under `dataDir/chats/`; see the file comment. */
export class FileLogBackend implements LogBackend {
  readonly dataDir: string;
  readonly chatsDir: string;
  readonly checkpointsDir: string;
  private readonly appendMutex = new KeyedMutex();
  private readonly chatMutex = new KeyedMutex();
  /** Open chats and append handles, least recently used first. */
  private readonly open: OpenChats;
  private readonly fsync: FsyncMode;
  private readonly index: StoreFileIndex;
  private readonly claim: DataDirClaim | undefined;
  private readonly log: StoreLog | undefined;
  /** Chats created in `batch` mode, synced in the background. */
  private readonly creations: CreationSync;

  constructor(opts: FileLogBackendOptions) {
    // First: a store refused its dataDir has touched nothing in it.
    this.claim = opts.claim ? claimDataDir(opts.dataDir, { log: opts.log }) : undefined;
    this.fsync = opts.fsync ?? 'batch';
    this.dataDir = opts.dataDir;
    this.chatsDir = join(opts.dataDir, 'chats');
    this.checkpointsDir = join(opts.dataDir, 'checkpoints');
    this.log = opts.log;
    this.open = new OpenChats({
      pathOf: (id) => this.pathOf(id),
      appendMutex: this.appendMutex,
      fsync: this.fsync,
      maxOpenFiles: opts.maxOpenFiles ?? 256,
      maxOpenChats: opts.maxOpenChats ?? 1000,
      clock: opts.clock ?? systemClock,
      log: opts.log,
      onAbsent: (id) => this.index.forget(id),
      leavingTornTails: opts.indexCheck === 'when-owner-exited',
    });
    this.creations = new CreationSync(this.chatsDir, SYNC_DELAY_MS);
    this.index = new StoreFileIndex({
      dataDir: opts.dataDir,
      indexCheck: opts.indexCheck ?? 'always',
      log: opts.log,
      source: this.rebuildSource(),
    });
  }

  /** The path of a chat's log file (the original generation). Refuses malformed ids. */
  pathOf(id: string): string {
    return pathInside(this.chatsDir, id, '.jsonl');
  }

  async create(header: Header, seed: readonly Event[] = []): Promise<'created' | 'exists'> {
    const path = this.pathOf(header.id);
    const first = headerLine(header);
    const prepared = prepareSeed(seed);
    const data = batchBytes(prepared, first);
    return this.appendMutex.run(header.id, async () => {
      if (await this.open.chat(header.id)) return 'exists';
      await fsp.mkdir(this.chatsDir, { recursive: true });
      // `batch`: the new file and its name are synced in the background, as appends are
      // (`CreationSync`); `always`: before the chat is acknowledged.
      const durable = this.fsync === 'always';
      if (!(await createWhole(path, data, durable))) return 'exists';
      if (durable) await syncDir(this.chatsDir);
      else this.creations.add(path);
      // The chat as just written, known without reading it back.
      let pos = Buffer.byteLength(first);
      const offsets: number[] = [];
      for (const bytes of prepared.lineBytes) {
        offsets.push(pos);
        pos += bytes;
      }
      const file: ChatFile = { id: header.id, path, header, offsets, size: pos, lastAt: seed.at(-1)?.at };
      this.open.created(file);
      this.index.record({
        id: header.id,
        createdAt: header.createdAt,
        eventCount: seed.length,
        lastActivityAt: seed.at(-1)?.at ?? header.createdAt,
        size: data.length,
        ...(header.parent !== undefined ? { parent: header.parent } : {}),
        ...(header.team !== undefined ? { team: header.team } : {}),
        ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
      });
      return 'created';
    });
  }

  async header(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    return (await this.open.chat(id))?.header;
  }

  /** `header`, once the chat's file is found still there (`checkedHeader`). */
  async checkedHeader(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    return checkedHeader(this.open, id);
  }

  async append(
    id: string,
    events: readonly NewEvent[],
    now: number,
    expectedCount?: number,
    opts: AppendOptions = {},
  ): Promise<Event[]> {
    return this.appendMutex.run(id, async () => {
      const c = await this.open.existing(id);
      if (expectedCount !== undefined && c.offsets.length !== expectedCount) throw changedUnder(id);
      const batch = prepareBatch(events, c.offsets.length, now, opts.built);
      if (batch.events.length === 0) return [];
      const data = batchBytes(batch);
      try {
        await this.open.writer(id, c.path).append(data, c.size);
      } catch (err) {
        // Reopen next time: if the undo failed too, opening sets the partial bytes aside.
        this.open.forget(id);
        await this.open.dropWriter(id);
        if (removed(err)) throw new ChatRemoved(id);
        throw new OdaError('ODA_ERR_LOG_WRITE', 500, `could not append to chat log ${id}`, { cause: err });
      }
      // The index moves only once the bytes are written (and, with fsync `always`, synced), so
      // readers never see unacknowledged events.
      let pos = c.size;
      for (const bytes of batch.lineBytes) {
        c.offsets.push(pos);
        pos += bytes;
      }
      c.size = pos;
      c.lastAt = now;
      this.index.record(rowOfOpenChat(c));
      return batch.events;
    });
  }

  read(id: string, offset: number, length?: number): Promise<Event[]> {
    return checkedRead(this.open, id, offset, length);
  }

  async count(id: string): Promise<number> {
    return (await this.open.existing(id)).offsets.length;
  }

  /** The event count of a chat open in memory (this process is the file store's only writer). */
  knownCount(id: string): number | undefined {
    return this.open.file(id)?.offsets.length;
  }

  /** Every chat, in id order, from the index (`StoreFileIndex.list`); for tools and tests. */
  list(): Promise<ChatSummary[]> {
    return this.index.list();
  }

  /** One page of chats from the index, newest activity first (`StoreFileIndex.listPage`). */
  listPage(q: ChatListQuery): Promise<ChatPage> {
    return this.index.listPage(q);
  }

  /**
   * Stored event lines from `offset`, checked as they are read: at most `maxEvents`, and no more
   * than `maxBytes` of lines unless the first line alone is larger. The byte range is known from
   * the chat's line offsets, and the file is read in chunks of at most 1 MB of whole lines.
   */
  readLines(id: string, offset: number, maxEvents: number, maxBytes: number): Promise<EventLines> {
    return checkedReadLines(this.open, id, offset, maxEvents, maxBytes);
  }

  /** How many chats this store holds state or handles for, and the size of its index. */
  stats(): StoreStats {
    return { ...this.open.stats(), ...this.index.stats() };
  }

  /** Resolves once the chat index is open and any rebuild under way has finished. */
  async indexReady(): Promise<void> {
    await this.index.ready();
  }

  /** Opens the chat index and starts its check or rebuild (`StoreFileIndex.open`); done at start. */
  openIndex(): void {
    this.index.open();
  }

  private rebuildSource(): RebuildSource {
    return {
      chatsDir: this.chatsDir,
      openChat: (id: string) => this.open.file(id),
      openViaStore: (id: string) => this.open.chat(id),
    };
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    // An open chat's id was checked when it was opened.
    if (!this.open.has(id)) this.pathOf(id);
    return this.chatMutex.run(id, fn);
  }

  getCheckpoint(id: string, model: string): Promise<StoredCheckpoint | undefined> {
    return readCheckpointFile(this.checkpointsDir, id, model);
  }

  async putCheckpoint(id: string, checkpoint: StoredCheckpoint): Promise<void> {
    await writeCheckpointFile(this.checkpointsDir, id, checkpoint);
    // The chat's checkpoints of the model's older versions: never read again. Their removal is
    // housekeeping, so a failure is only mentioned.
    await removeOlderCheckpointFiles(this.checkpointsDir, id, checkpoint.model, (err, file) =>
      this.log?.('debug', 'chat log: an older checkpoint could not be removed', {
        chatId: id,
        model: checkpoint.model,
        ...(file !== undefined ? { file } : {}),
        err,
      }),
    );
  }

  async ping(): Promise<boolean> {
    try {
      await fsp.mkdir(this.chatsDir, { recursive: true });
      await fsp.access(this.chatsDir, fsc.W_OK);
      const probe = await writeTemp(join(this.chatsDir, 'probe'), '');
      await fsp.rm(probe, { force: true });
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.appendMutex.idle();
    await this.creations.flush();
    await this.open.close();
    try {
      await this.index.close();
    } finally {
      this.claim?.release();
    }
  }
}
