/**
 * Opening one chat's JSONL file: one streaming pass builds the index of line offsets (the file is
 * never held in memory whole), a torn last line left by a crash is moved aside and cut off, and the
 * header is checked. Everything acknowledged (a complete line) stays.
 */
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { OdaError } from '../lib/errors.ts';
import { header as headerSchema, VERSION, type Header } from './format/current.ts';
import { convertFileBeside } from './convert.ts';
import { isKnownVersion } from './format/index.ts';
import {
  besidePath,
  headOfLine,
  legacyGenerationTarget,
  moveGeneration,
  readFirstLine,
} from './generations.ts';

export { readFirstLine };

/** What the file store keeps in memory per open chat. */
export interface ChatFile {
  id: string;
  /** The file the chat is read from and appended to (the converted generation for older logs). */
  path: string;
  header: Header;
  /** Byte offset of each event line; its length is the event count. */
  offsets: number[];
  /** Bytes of complete lines (the append position). */
  size: number;
  /** `at` of the last event. */
  lastAt: number | undefined;
}

/**
 * What opening a chat file set aside, for the operator: a torn last line (`line`; `events` whole
 * events stay), or a file without a whole header line (`header`: a crash right after the chat was
 * created, before its bytes reached the disk; the chat is absent and starts anew).
 */
export interface SetAside {
  kind: 'line' | 'header';
  /** The file the bytes went to, beside the chat's. */
  path: string;
  bytes: number;
  events: number;
}

const CHUNK = 64 * 1024;
const damaged = (id: string, why: string, cause?: unknown) =>
  new OdaError('ODA_ERR_LOG_READ', 500, `chat log ${id} is damaged: ${why}`, { cause });

/** Positions just after every `\n` in the file, streaming it in chunks. */
async function lineEnds(fh: FileHandle, fileSize: number): Promise<number[]> {
  const ends: number[] = [];
  const buf = Buffer.alloc(CHUNK);
  let pos = 0;
  while (pos < fileSize) {
    const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, fileSize - pos), pos);
    if (bytesRead === 0) break;
    let i = buf.indexOf(10);
    while (i !== -1 && i < bytesRead) {
      ends.push(pos + i + 1);
      i = buf.indexOf(10, i + 1);
    }
    pos += bytesRead;
  }
  return ends;
}

async function readRange(fh: FileHandle, from: number, to: number): Promise<Buffer> {
  const buf = Buffer.alloc(to - from);
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await fh.read(buf, got, buf.length - got, from + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/** The parsed line, or undefined when it is not JSON. */
function parseJson(line: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(line) as unknown };
  } catch {
    return undefined;
  }
}

/** The numeric `at` of a parsed event line, if it has one. */
function atOf(parsed: { value: unknown } | undefined): number | undefined {
  const raw = parsed?.value;
  const at = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).at : undefined;
  return typeof at === 'number' ? at : undefined;
}

async function lineAt(fh: FileHandle, start: number, end: number): Promise<string> {
  return (await readRange(fh, start, end - 1)).toString('utf8');
}

/** A free name beside `path` for bytes set aside at `now`. */
function tornName(path: string, now: number, n: number): string {
  return `${path}.torn-${now}${n === 0 ? '' : `-${n}`}`;
}

/**
 * Moves the bytes from `from` to the end into `<path>.torn-<now>` and cuts the file back to `from`;
 * returns the file they went to.
 */
async function setTornTailAside(
  fh: FileHandle,
  path: string,
  from: number,
  fileSize: number,
  now: number,
): Promise<string> {
  const tail = await readRange(fh, from, fileSize);
  let aside: string;
  for (let n = 0; ; n++) {
    aside = tornName(path, now, n);
    try {
      await fsp.writeFile(aside, tail, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  await fh.truncate(from);
  await fh.datasync();
  return aside;
}

/** Parses a header line of the current version; throws ODA_ERR_LOG_READ when it is not one. */
export function parseHeaderLine(id: string, line: string): Header {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    throw damaged(id, 'unreadable header', err);
  }
  const parsed = headerSchema.safeParse(raw);
  if (!parsed.success) throw damaged(id, 'invalid header', parsed.error);
  if (parsed.data.id !== id) throw damaged(id, `header names chat ${parsed.data.id}`);
  return parsed.data;
}

/** The format version a header line declares, or undefined when it cannot be read. */
export function headerVersion(line: string): unknown {
  return headOfLine(line).version;
}

/**
 * How a chat file is opened: by its writer, which sets a torn last line aside (`onSetAside` is told),
 * or `leavingTornTails` by a reader beside a gateway, which writes nothing to it: a last line
 * without its newline may be that gateway's append under way, so the chat is read as its whole
 * lines and the file is left as it is.
 */
export interface OpenFileOptions {
  onSetAside?: (what: SetAside) => void;
  leavingTornTails?: boolean;
}

/**
 * Opens a v4 chat file at `path`: indexes its lines, sets a torn last line aside (named with `now`)
 * unless `leavingTornTails`, checks the header. Undefined when the file does not exist.
 */
export async function openV4File(
  id: string,
  path: string,
  now: number,
  opts: OpenFileOptions = {},
): Promise<ChatFile | undefined> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(path, opts.leavingTornTails ? 'r' : 'r+');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const fileSize = (await fh.stat()).size;
    const ends = await lineEnds(fh, fileSize);
    const headerEnd = ends[0];
    if (headerEnd === undefined) throw damaged(id, 'no complete header line');
    const header = parseHeaderLine(id, await lineAt(fh, 0, headerEnd));
    if (header.version !== VERSION) throw damaged(id, `header version ${String(header.version)}`);
    // Event line k spans ends[k]..ends[k + 1] (line 0, the header, ends at ends[0]).
    const offsets = ends.slice(0, -1);
    let size = ends[ends.length - 1] ?? headerEnd;
    const lastStart = offsets[offsets.length - 1];
    if (lastStart !== undefined && parseJson(await lineAt(fh, lastStart, size)) === undefined) {
      // A complete line that is not JSON is a torn write too (garbage that happens to end in \n).
      size = lastStart;
      offsets.pop();
    }
    if (size < fileSize && !opts.leavingTornTails) {
      const aside = await setTornTailAside(fh, path, size, fileSize, now);
      opts.onSetAside?.({ kind: 'line', path: aside, bytes: fileSize - size, events: offsets.length });
    }
    const newLast = offsets[offsets.length - 1];
    // Damage short of a torn write (JSON of the wrong shape) stays in place and is reported on read.
    const lastAt = newLast === undefined ? undefined : atOf(parseJson(await lineAt(fh, newLast, size)));
    return { id, path, header, offsets, size, lastAt };
  } finally {
    await fh.close();
  }
}

/**
 * A file that holds no whole line (its header line cut short, or no bytes at all) is what a crash
 * leaves of a chat created just before it when the store acknowledges writes before syncing them
 * (`store.fsync: batch`): the name was linked, the bytes had not reached the disk. It is moved
 * aside (`<path>.torn-<now>`), so the chat can start anew; returns where it went. A file with a
 * whole first line is left to the checks that follow.
 */
async function setTornCreationAside(path: string, first: string, now: number): Promise<string | undefined> {
  const size = (await fsp.stat(path)).size;
  if (size !== Buffer.byteLength(first)) return undefined;
  if (parseJson(first) !== undefined) return undefined;
  for (let n = 0; ; n++) {
    const aside = tornName(path, now, n);
    try {
      await fsp.link(path, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    await fsp.unlink(path);
    return aside;
  }
}

/**
 * Opens a chat's log at `path`, whatever version wrote it: an older log is converted once, its
 * converted generation saved beside it (`besidePath`, linked into place: never replacing one another
 * process saved first), and that generation is the chat's file from then on; the original is never
 * written. Undefined when the chat does not exist (or, `leavingTornTails`, has no whole line yet).
 */
export async function openChatFile(
  id: string,
  path: string,
  now: number,
  opts: OpenFileOptions = {},
): Promise<ChatFile | undefined> {
  const first = await readFirstLine(path);
  if (first === undefined) return undefined;
  if (opts.leavingTornTails) {
    if (parseJson(first) === undefined && (await fsp.stat(path)).size === Buffer.byteLength(first))
      return undefined;
  } else {
    const aside = await setTornCreationAside(path, first, now);
    if (aside !== undefined) {
      opts.onSetAside?.({ kind: 'header', path: aside, bytes: Buffer.byteLength(first), events: 0 });
      return undefined;
    }
  }
  const head = headOfLine(first);
  if (head.id !== id) {
    // A generation an earlier build saved under this chat's name (`<other>.v5.jsonl` is the file of
    // chat `<other>.v5`) moves to its own name: this chat does not exist yet.
    const target = legacyGenerationTarget(path, head);
    if (target !== undefined && (await moveGeneration(path, target))) return undefined;
  }
  const version = head.version;
  if (version === VERSION) return openV4File(id, path, now, opts);
  // Another chat's file under this name is never converted.
  if (head.id !== id) throw damaged(id, 'header names another chat');
  if (!isKnownVersion(version)) {
    throw new OdaError(
      'ODA_ERR_LOG_READ',
      500,
      `chat log ${id} has unsupported format version ${String(version)}`,
    );
  }
  const beside = besidePath(path);
  const converted =
    (await openV4File(id, beside, now, opts)) ??
    (await openV4File(id, await convertFileBeside(path), now, opts));
  if (!converted) throw damaged(id, 'the converted generation vanished');
  return converted;
}
