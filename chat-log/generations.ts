/**
 * Where the generations of a converted chat log live, and the header line that says whose
 * generation a file is. An older log `<chat>.jsonl` converted to version N is saved beside it as
 * `<chat>@vN.jsonl`: `@` is no chat-id character (`chat-id.ts`), so no chat's file can have that
 * name and the chat files' listing never takes a generation for a chat.
 *
 * Builds before this one named a generation `<chat>.vN.jsonl`, which is also the file of the chat
 * `<chat>.vN`. Such a generation is moved to its own name when it is found (`moveGeneration`),
 * which frees the name for that chat; nothing in it changes.
 */
import { link, open, stat, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { CURRENT_VERSION } from './format/index.ts';

const CHUNK = 64 * 1024;

const nameOf = (path: string) => basename(path).replace(/\.jsonl$/, '');

/** The path of the version-`version` generation beside `path`: `<name>@v<version>.jsonl`. */
export function generationPath(path: string, version: number): string {
  return join(dirname(path), `${nameOf(path)}@v${version}.jsonl`);
}

/** The path earlier builds gave that generation: `<name>.v<version>.jsonl`. */
export function legacyGenerationPath(path: string, version: number): string {
  return join(dirname(path), `${nameOf(path)}.v${version}.jsonl`);
}

/** The path of the converted (current) generation beside `path`: `<name>@v5.jsonl` today. */
export function besidePath(path: string): string {
  return generationPath(path, CURRENT_VERSION);
}

/** Reads the first line of a file (the header) without reading the rest; undefined when absent. */
export async function readFirstLine(path: string): Promise<string | undefined> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    let text = '';
    const buf = Buffer.alloc(CHUNK);
    for (let pos = 0; ;) {
      const { bytesRead } = await fh.read(buf, 0, CHUNK, pos);
      if (bytesRead === 0) return text;
      const nl = buf.subarray(0, bytesRead).indexOf(10);
      if (nl !== -1) return text + buf.toString('utf8', 0, nl);
      text += buf.toString('utf8', 0, bytesRead);
      pos += bytesRead;
    }
  } finally {
    await fh.close();
  }
}

/** The version and chat id a header line names (each undefined when it cannot be read). */
export function headOfLine(line: string): { version?: unknown; id?: unknown } {
  try {
    const raw: unknown = JSON.parse(line);
    return typeof raw === 'object' && raw !== null ? (raw as { version?: unknown; id?: unknown }) : {};
  } catch {
    return {};
  }
}

/**
 * Where the file at `path`, whose header is `head`, belongs when it is a generation an earlier
 * build named like a chat: the file is `<id>.v<version>.jsonl` and its header names chat `<id>` at
 * that version. Undefined for any other file.
 */
export function legacyGenerationTarget(
  path: string,
  head: { version?: unknown; id?: unknown },
): string | undefined {
  const { id, version } = head;
  if (typeof id !== 'string' || typeof version !== 'number' || !Number.isSafeInteger(version)) {
    return undefined;
  }
  if (basename(path) !== `${id}.v${version}.jsonl`) return undefined;
  return generationPath(join(dirname(path), `${id}.jsonl`), version);
}

const gone = (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * Moves a generation from its earlier name `from` to `to`, never replacing a file there: linked
 * under the new name, then unlinked from the old (a move cut short leaves both names on one file,
 * finished next time). True once `from` no longer holds it (also when another process moved it
 * first); false when another file already holds `to`.
 */
export async function moveGeneration(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
  } catch (err) {
    if (gone(err)) return true;
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    let same: boolean;
    try {
      const [a, b] = await Promise.all([stat(from), stat(to)]);
      same = a.ino === b.ino && a.dev === b.dev;
    } catch (statErr) {
      if (gone(statErr)) return true;
      throw statErr;
    }
    if (!same) return false;
  }
  try {
    await unlink(from);
  } catch (err) {
    if (!gone(err)) throw err;
  }
  return true;
}
