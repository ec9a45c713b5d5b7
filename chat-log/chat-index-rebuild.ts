/**
 * Brings the file store's chat index (`chat-index.ts`) in line with the chat files: every chat file
 * gets a row, a row whose file is gone is removed. A file whose size is the one its row accounts
 * for is not read at all; a file that grew since is read from that size on (only the new lines are
 * counted); a new file is read once, in chunks, counting its lines (the header and the last line
 * are the only ones parsed). Nothing is ever written to a chat file here: a torn tail is left for
 * the store to set aside when it opens the chat.
 *
 * It runs in the background while the gateway serves: rows of chats the store has open come from
 * its memory, and a row changed by the store while a file was being read is kept (the read is
 * dropped), so a rebuild never takes a row back in time.
 *
 * The check of an index closed cleanly (`unindexedOnly`) is the same pass with one difference: only
 * chat files without a row are read; it catches what was done to the chat files by hand while the
 * gateway was stopped (files added, files removed) at the cost of listing the folder and the ids.
 */
import { promises as fsp, type Dir } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { isChatId } from './chat-id.ts';
import { headerVersion, parseHeaderLine, readFirstLine, type ChatFile } from './chat-file.ts';
import { VERSION } from './format/current.ts';
import type { ChatIndex, IndexRow } from './chat-index.ts';

/** What the rebuild needs from the store. */
export interface RebuildSource {
  chatsDir: string;
  /** The in-memory state of a chat the store has open, if it has. */
  openChat(id: string): ChatFile | undefined;
  /** Opens a chat through the store (used for logs of older versions, which are converted once). */
  openViaStore(id: string): Promise<ChatFile | undefined>;
}

/** A progress or outcome line for the operator. */
export type IndexLog = (level: 'info' | 'warn', message: string, fields: Record<string, unknown>) => void;

export interface RebuildProgress {
  /** Chat files found (known once the folder is listed). */
  total: number;
  /** Files looked at so far. */
  done: number;
  /** Rows written or removed. */
  changed: number;
}

const CHUNK = 64 * 1024;
const PARALLEL = 8;
/** Names or ids handled between two turns of the event loop (100,000 never hold up a request). */
const SLICE = 5000;
const breathe = () => new Promise<void>((resolve) => setImmediate(resolve));
const PROGRESS_EVERY_MS = 5000;
/** The name earlier builds gave a converted generation (`<chat>.v5`), a name a chat may have too. */
const LEGACY_GENERATION = /\.v\d+$/;
/** Stored event lines begin with their seq and time (event-batch.ts writes them first). */
const LINE_START = /^\{"seq":\d+,"at":(\d+)[,}]/;

/** The row of a chat the store holds open. */
export function rowOfOpenChat(c: ChatFile): IndexRow {
  const row: IndexRow = {
    id: c.id,
    createdAt: c.header.createdAt,
    eventCount: c.offsets.length,
    lastActivityAt: c.lastAt ?? c.header.createdAt,
    size: c.size,
  };
  if (c.header.parent !== undefined) row.parent = c.header.parent;
  if (c.header.team !== undefined) row.team = c.header.team;
  if (c.header.cwd !== undefined) row.cwd = c.header.cwd;
  return row;
}

async function readAt(fh: FileHandle, from: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, from + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/** The `at` of the event line starting at `start` (its first bytes, or the whole line if need be). */
async function atOfLine(fh: FileHandle, start: number, end: number): Promise<number | undefined> {
  const head = (await readAt(fh, start, Math.min(end - start, 64))).toString('utf8');
  const m = LINE_START.exec(head);
  if (m) return Number(m[1]);
  try {
    const parsed: unknown = JSON.parse((await readAt(fh, start, end - start)).toString('utf8'));
    const at = typeof parsed === 'object' && parsed !== null ? (parsed as { at?: unknown }).at : undefined;
    return typeof at === 'number' ? at : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Counts the complete lines of `fh` from byte `from` to `size` (reading through `buf`); gives the
 * count, the end of the last complete line and where that line starts.
 */
async function countLines(
  fh: FileHandle,
  from: number,
  size: number,
  buf: Buffer,
): Promise<{ lines: number; end: number; lastStart: number | undefined }> {
  let lines = 0;
  let end = from;
  let lastStart: number | undefined;
  for (let pos = from; pos < size;) {
    const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, size - pos), pos);
    if (bytesRead === 0) break;
    for (let i = buf.indexOf(10); i !== -1 && i < bytesRead; i = buf.indexOf(10, i + 1)) {
      lastStart = end;
      end = pos + i + 1;
      lines++;
    }
    pos += bytesRead;
  }
  return { lines, end, lastStart };
}

/**
 * The row of a chat file: undefined when it is not a chat, `older` when it is a log of an older
 * version (the store converts it). A current-version file that grew since `prior` is read from
 * `prior`'s size on.
 */
async function scanFile(
  id: string,
  path: string,
  prior: IndexRow | undefined,
  buf: Buffer,
): Promise<IndexRow | 'older' | undefined> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const size = (await fh.stat()).size;
    if (prior && prior.size === size) return prior;
    // The header line from the first chunk (one file read for a small chat), else read on its own.
    const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, size), 0);
    const nl = buf.subarray(0, bytesRead).indexOf(10);
    const first = nl !== -1 ? buf.toString('utf8', 0, nl) : ((await readFirstLine(path)) ?? '');
    if (headerVersion(first) !== VERSION) return 'older';
    if (prior && prior.size < size && prior.size > 0) {
      const [before] = await readAt(fh, prior.size - 1, 1);
      if (before === 10) {
        const tail = await countLines(fh, prior.size, size, buf);
        if (tail.lines === 0) return prior;
        const at =
          tail.lastStart === undefined ? undefined : await atOfLine(fh, tail.lastStart, tail.end - 1);
        return {
          ...prior,
          eventCount: prior.eventCount + tail.lines,
          lastActivityAt: at ?? prior.lastActivityAt,
          size: tail.end,
        };
      }
    }
    const all = await countLines(fh, 0, size, buf);
    if (all.lines === 0) return undefined;
    const header = parseHeaderLine(id, first);
    const events = all.lines - 1;
    const at =
      events > 0 && all.lastStart !== undefined ? await atOfLine(fh, all.lastStart, all.end - 1) : undefined;
    const row: IndexRow = {
      id,
      createdAt: header.createdAt,
      eventCount: events,
      lastActivityAt: at ?? header.createdAt,
      size: all.end,
    };
    if (header.parent !== undefined) row.parent = header.parent;
    if (header.team !== undefined) row.team = header.team;
    if (header.cwd !== undefined) row.cwd = header.cwd;
    return row;
  } finally {
    await fh.close();
  }
}

/** The chats of a folder by id, listed a batch of names at a time. */
async function chatIdsIn(dir: string): Promise<Set<string>> {
  const present = new Set<string>();
  let entries: Dir;
  try {
    entries = await fsp.opendir(dir, { bufferSize: 1024 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return present;
    throw err;
  }
  for await (const { name } of entries) {
    const id = name.slice(0, -'.jsonl'.length);
    if (name.endsWith('.jsonl') && isChatId(id)) present.add(id);
  }
  return present;
}

/** Every indexed id, read a slice at a time. */
async function indexedIds(index: ChatIndex): Promise<Set<string>> {
  const ids = new Set<string>();
  for (let after: string | undefined; ;) {
    const slice = index.idsAfter(after, SLICE);
    for (const id of slice) ids.add(id);
    if (slice.length < SLICE) return ids;
    after = slice[slice.length - 1];
    await breathe();
  }
}

const sameRow = (a: IndexRow | undefined, b: IndexRow | undefined) =>
  a === b ||
  (a !== undefined &&
    b !== undefined &&
    a.size === b.size &&
    a.eventCount === b.eventCount &&
    a.lastActivityAt === b.lastActivityAt);

/**
 * Brings `index` in line with the chat files of `src` (see the file comment). `progress` is updated
 * as it goes; `stopped()` ends it early (the store is closing). Resolves with true once the index
 * is in line, false when it was stopped first.
 */
export async function rebuildIndex(
  index: ChatIndex,
  src: RebuildSource,
  opts: {
    progress: RebuildProgress;
    stopped: () => boolean;
    log?: IndexLog;
    onListed?: (total: number) => void;
    /** Read only the chat files that have no row (the check of an index closed cleanly). */
    unindexedOnly?: boolean;
  },
): Promise<boolean> {
  const { progress, log } = opts;
  // The chats of the folder, and for a check the rows it has at its start.
  const present = await chatIdsIn(src.chatsDir);
  const indexed = opts.unindexedOnly ? await indexedIds(index) : undefined;
  const ids: string[] = [];
  let seen = 0;
  for (const id of present) {
    if (!indexed?.has(id)) ids.push(id);
    if (++seen % SLICE === 0) await breathe();
  }
  progress.total = ids.length;
  opts.onListed?.(ids.length);
  let lastReport = Date.now();
  const started = lastReport;

  const one = async (id: string, buf: Buffer): Promise<void> => {
    const open = src.openChat(id);
    if (open) {
      index.put(rowOfOpenChat(open));
      progress.changed++;
      return;
    }
    const prior = index.get(id);
    const path = join(src.chatsDir, `${id}.jsonl`);
    let row: IndexRow | undefined;
    try {
      const scanned = await scanFile(id, path, prior, buf);
      if (scanned === 'older') {
        // An older log: the store converts it once and reads the converted generation.
        const c = await src.openViaStore(id);
        row = c ? rowOfOpenChat(c) : undefined;
      } else row = scanned;
    } catch {
      // Not a chat (a damaged header, a converted generation an earlier build named like a chat): no
      // row. Opening the latter through the store moves it to its own name, freeing the chat's.
      if (LEGACY_GENERATION.test(id)) await src.openViaStore(id).catch(() => undefined);
      row = undefined;
    }
    // The store may have opened or changed the chat while its file was read: its state wins.
    const nowOpen = src.openChat(id);
    if (nowOpen) row = rowOfOpenChat(nowOpen);
    else if (!sameRow(index.get(id), prior)) return;
    if (sameRow(row, prior)) return;
    if (row) index.put(row);
    else if (prior) index.delete(id);
    progress.changed++;
  };

  let next = 0;
  const worker = async () => {
    // One read buffer per worker for the whole rebuild: no allocation per file.
    const buf = Buffer.allocUnsafe(CHUNK);
    while (next < ids.length && !opts.stopped()) {
      const id = ids[next++]!;
      await one(id, buf);
      progress.done++;
      if (log && Date.now() - lastReport >= PROGRESS_EVERY_MS) {
        lastReport = Date.now();
        log('info', 'chat index rebuild in progress', { ...progress });
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  if (opts.stopped()) return false;

  // Rows whose chat file is gone (removed by an operator) go too. A check looks at the rows it
  // listed at its start: one added since is of a chat the store wrote, whose file is there.
  seen = 0;
  for (const id of indexed ?? (await indexedIds(index))) {
    if (++seen % SLICE === 0) await breathe();
    if (present.has(id) || src.openChat(id)) continue;
    const exists = await fsp.stat(join(src.chatsDir, `${id}.jsonl`)).then(
      () => true,
      () => false,
    );
    if (!exists) {
      index.delete(id);
      progress.changed++;
    }
  }
  index.flush();
  // A check that found nothing to do says nothing: it runs at every start.
  if (!opts.unindexedOnly || progress.changed > 0) {
    log?.('info', 'chat index is up to date', { ...progress, ms: Date.now() - started });
  }
  return true;
}
