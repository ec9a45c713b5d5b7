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
import { CURRENT_VERSION, isKnownVersion } from './format/index.ts';

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

/** The version and id a log file's header names; undefined when there is no such file. */
export async function headOf(path: string): Promise<{ version?: unknown; id?: unknown } | undefined> {
  const first = await readFirstLine(path);
  return first === undefined ? undefined : headOfLine(first);
}

/** True when the file at `path` holds the version-`version` generation of chat `id` (by its header). */
export async function isGenerationOf(path: string, version: number, id: string): Promise<boolean> {
  const head = await headOf(path);
  return head?.version === version && head.id === id;
}

/**
 * The newest generation an earlier build converted `path` to (`<name>@v<k>.jsonl`, or
 * `<name>.v<k>.jsonl` as builds before named it; k between the original's version `from` and the
 * current one): the chat was appended to there, so the next conversion starts from it. Undefined
 * when there is none.
 */
export async function newestEarlierGeneration(
  path: string,
  from: number,
  id: string,
): Promise<string | undefined> {
  for (let k = CURRENT_VERSION - 1; k > from; k--) {
    for (const candidate of [generationPath(path, k), legacyGenerationPath(path, k)]) {
      if (await isGenerationOf(candidate, k, id)) return candidate;
    }
  }
  return undefined;
}

/**
 * The file a gateway reads chat `id` from, whose own file is `path`, found without moving, converting
 * or writing anything (for readers beside a running gateway, such as `oda-gateway log read`): the
 * chat's own file when it is of the current version (or of a version this build does not know, or
 * another chat's: opening it says what is wrong); for an older log, its converted generation, or the
 * one an earlier build saved under the old name `<name>.v5.jsonl`, else the newest earlier
 * generation the next conversion starts from (`@v4`), else the log itself, as the store picks them
 * (`chat-file.ts`, `convert.ts`). Undefined when the chat does not exist: no file, or a file that is
 * another chat's generation an earlier build named like this chat.
 */
export async function generationToRead(path: string, id: string): Promise<string | undefined> {
  const head = await headOf(path);
  if (head === undefined) return undefined;
  if (head.id !== id && legacyGenerationTarget(path, head) !== undefined) return undefined;
  const { version } = head;
  if (version === CURRENT_VERSION || head.id !== id || !isKnownVersion(version)) return path;
  const beside = besidePath(path);
  if ((await headOf(beside)) !== undefined) return beside;
  const legacy = legacyGenerationPath(path, CURRENT_VERSION);
  if (await isGenerationOf(legacy, CURRENT_VERSION, id)) return legacy;
  return (await newestEarlierGeneration(path, version, id)) ?? path;
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
