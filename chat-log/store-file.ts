/**
 * The embedded chat-log backend: one append-only JSONL file per chat under `dataDir/chats/`
 * (line 1 the header, then one event per line), checkpoints as small JSON files under
 * `dataDir/checkpoints/<id>/`. Appends of one chat are serialised in process and written with one
 * write plus datasync; a torn last line left by a crash is set aside when the file is next opened.
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { OdaError } from '../lib/errors.ts';
import { systemClock, type Clock } from '../lib/clock.ts';
import { parseStoredCheckpoint, type ChatSummary, type LogBackend, type StoredCheckpoint } from './store.ts';
import type { Event, Header, NewEvent } from './format/current.ts';
import { KeyedMutex } from './keyed-mutex.ts';
import { isChatId, notFound, pathInside } from './chat-id.ts';
import { headerLine, prepareBatch, prepareSeed, parseEventLine } from './event-batch.ts';
import { openChatFile, type ChatFile } from './chat-file.ts';
import { AppendFile, type FsyncMode } from './append-file.ts';

export interface FileLogBackendOptions {
  dataDir: string;
  /** When an append is acknowledged: after fdatasync (`always`) or after the write (`batch`, default). */
  fsync?: FsyncMode;
  /** Append handles kept open at most; the least recently used beyond this are closed. */
  maxOpenFiles?: number;
  /** Names set-aside torn tails; defaults to the system clock. */
  clock?: Clock;
}

const changedUnder = (id: string) =>
  new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, `chat ${id} changed while it was being appended to; retry`);

/** Writes `data` to a temporary file beside `path` and syncs it; returns the temporary path. */
async function writeTemp(path: string, data: string, sync = true): Promise<string> {
  const tmp = join(dirname(path), `.${randomBytes(8).toString('hex')}.tmp`);
  const fh = await fsp.open(tmp, 'wx');
  try {
    await fh.writeFile(data);
    if (sync) await fh.datasync();
  } catch (err) {
    await fh.close();
    await fsp.rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  return tmp;
}

async function syncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r').catch(() => undefined);
  if (!fh) return;
  await fh.sync().catch(() => undefined);
  await fh.close();
}

/** One JSONL file per chat under `dataDir/chats/`; see the file comment. */
export class FileLogBackend implements LogBackend {
  readonly dataDir: string;
  readonly chatsDir: string;
  readonly checkpointsDir: string;
  private readonly clock: Clock;
  private readonly appendMutex = new KeyedMutex();
  private readonly chatMutex = new KeyedMutex();
  /** Open chats: index of line offsets and count, kept after the first open. */
  private readonly open = new Map<string, Promise<ChatFile | undefined>>();
  /** Append handles by chat, in least-recently-used order. */
  private readonly writers = new Map<string, AppendFile>();
  private readonly fsync: FsyncMode;
  private readonly maxOpenFiles: number;

  constructor(opts: FileLogBackendOptions) {
    this.fsync = opts.fsync ?? 'batch';
    this.maxOpenFiles = opts.maxOpenFiles ?? 256;
    this.dataDir = opts.dataDir;
    this.chatsDir = join(opts.dataDir, 'chats');
    this.checkpointsDir = join(opts.dataDir, 'checkpoints');
    this.clock = opts.clock ?? systemClock;
  }

  /** The path of a chat's log file (the original generation). Refuses malformed ids. */
  pathOf(id: string): string {
    return pathInside(this.chatsDir, id, '.jsonl');
  }

  /** The chat's open state, opening (and indexing, repairing, converting) it on first use. */
  private chat(id: string): Promise<ChatFile | undefined> {
    const path = this.pathOf(id);
    let p = this.open.get(id);
    if (!p) {
      p = openChatFile(id, path, this.clock.now());
      this.open.set(id, p);
      // An absent chat is not remembered: it may be created by another process later.
      p.then(
        (c) => c === undefined && this.open.get(id) === p && this.open.delete(id),
        () => this.open.get(id) === p && this.open.delete(id),
      );
    }
    return p;
  }

  private async existing(id: string): Promise<ChatFile> {
    const c = await this.chat(id);
    if (!c) throw notFound(id);
    return c;
  }

  async create(header: Header, seed: readonly Event[] = []): Promise<'created' | 'exists'> {
    const path = this.pathOf(header.id);
    const text = headerLine(header) + prepareSeed(seed).text;
    return this.appendMutex.run(header.id, async () => {
      if (await this.chat(header.id)) return 'exists';
      await fsp.mkdir(this.chatsDir, { recursive: true });
      const tmp = await writeTemp(path, text);
      try {
        // link() fails when the name exists, so two creators (even in two processes) never clobber.
        await fsp.link(tmp, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
        throw err;
      } finally {
        await fsp.rm(tmp, { force: true });
      }
      await syncDir(this.chatsDir);
      this.open.delete(header.id);
      return 'created';
    });
  }

  async header(id: string): Promise<Header | undefined> {
    if (!isChatId(id)) return undefined;
    return (await this.chat(id))?.header;
  }

  async append(
    id: string,
    events: readonly NewEvent[],
    now: number,
    expectedCount?: number,
  ): Promise<Event[]> {
    return this.appendMutex.run(id, async () => {
      const c = await this.existing(id);
      if (expectedCount !== undefined && c.offsets.length !== expectedCount) throw changedUnder(id);
      const batch = prepareBatch(events, c.offsets.length, now);
      if (batch.events.length === 0) return [];
      const data = Buffer.from(batch.text, 'utf8');
      try {
        await this.writer(id, c.path).append(data, c.size);
      } catch (err) {
        // Reopen next time: if the undo failed too, opening sets the partial bytes aside.
        this.open.delete(id);
        await this.dropWriter(id);
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
      return batch.events;
    });
  }

  async read(id: string, offset: number, length?: number): Promise<Event[]> {
    const c = await this.existing(id);
    // Snapshot the bounds first: later appends only add bytes after `size`.
    const count = c.offsets.length;
    const size = c.size;
    const start = Math.min(offset, count);
    const end = length === undefined ? count : Math.min(count, start + length);
    if (start >= end) return [];
    const from = c.offsets[start] ?? size;
    const to = end < count ? (c.offsets[end] ?? size) : size;
    const buf = Buffer.alloc(to - from);
    const fh = await fsp.open(c.path, 'r');
    try {
      let got = 0;
      while (got < buf.length) {
        const { bytesRead } = await fh.read(buf, got, buf.length - got, from + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      if (got < buf.length) {
        throw new OdaError('ODA_ERR_LOG_READ', 500, `chat log ${id} is shorter than its index`);
      }
    } finally {
      await fh.close();
    }
    const lines = buf.toString('utf8').split('\n');
    const out: Event[] = [];
    for (let i = 0; i < end - start; i++) out.push(parseEventLine(lines[i] ?? '', id, start + i));
    return out;
  }

  async count(id: string): Promise<number> {
    return (await this.existing(id)).offsets.length;
  }

  async list(): Promise<ChatSummary[]> {
    const names = await fsp.readdir(this.chatsDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [] as string[];
      throw err;
    });
    const out: ChatSummary[] = [];
    for (const name of names.sort()) {
      if (!name.endsWith('.jsonl')) continue;
      const id = name.slice(0, -'.jsonl'.length);
      if (!isChatId(id)) continue;
      const c = await this.chat(id).catch(() => undefined);
      if (!c || c.header.id !== id) continue;
      const summary: ChatSummary = {
        id,
        createdAt: c.header.createdAt,
        eventCount: c.offsets.length,
        lastActivityAt: c.lastAt ?? c.header.createdAt,
      };
      if (c.header.parent !== undefined) summary.parent = c.header.parent;
      if (c.header.team !== undefined) summary.team = c.header.team;
      out.push(summary);
    }
    return out;
  }

  async withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    this.pathOf(id);
    return this.chatMutex.run(id, fn);
  }

  private checkpointPath(id: string, model: string): string {
    return pathInside(pathInside(this.checkpointsDir, id), model, '.json', 'read model name');
  }

  async getCheckpoint(id: string, model: string): Promise<StoredCheckpoint | undefined> {
    const path = this.checkpointPath(id, model);
    let text: string;
    try {
      text = await fsp.readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return parseStoredCheckpoint(text, model);
  }

  async putCheckpoint(id: string, checkpoint: StoredCheckpoint): Promise<void> {
    const path = this.checkpointPath(id, checkpoint.model);
    await fsp.mkdir(dirname(path), { recursive: true });
    // A checkpoint is a shortcut, not a record: rename keeps it whole, and one lost to a power cut
    // is rebuilt from the log, so it is not synced.
    const tmp = await writeTemp(path, JSON.stringify(checkpoint), false);
    try {
      await fsp.rename(tmp, path);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err;
    }
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

  /** The chat's append handle, opened on first use; the least recently used are closed past the cap. */
  private writer(id: string, path: string): AppendFile {
    let w = this.writers.get(id);
    if (w && w.path !== path) {
      void w.close();
      w = undefined;
    }
    if (w) this.writers.delete(id);
    else w = new AppendFile(path, this.fsync);
    this.writers.set(id, w);
    while (this.writers.size > this.maxOpenFiles) {
      const [oldId, oldest] = this.writers.entries().next().value as [string, AppendFile];
      this.writers.delete(oldId);
      void oldest.close();
    }
    return w;
  }

  private async dropWriter(id: string): Promise<void> {
    const w = this.writers.get(id);
    this.writers.delete(id);
    await w?.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.appendMutex.idle();
    await Promise.all([...this.writers.values()].map((w) => w.close().catch(() => undefined)));
    this.writers.clear();
    this.open.clear();
  }
}
