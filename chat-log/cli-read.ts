/**
 * `oda-gateway log read <chat id or file> [--offset N] [--length N] [--config FILE] [--data-dir DIR]`:
 * prints part of a chat log as JSON lines, for people who support chats. A file is read through the
 * definition of the version that wrote it (older logs are shown converted to the current version);
 * a chat id is looked up in the gateway's store (`cli-store.ts`: its config's data directory or
 * Redis store, or the data directory `--data-dir` names). It never writes: on the file store the
 * generation of the chat a gateway reads is read directly (never through the store, whose opening
 * sets a torn tail aside and moves or converts an older log's generations), a torn last line is
 * reported, not set aside, and an older log is converted in memory only; a Redis store is read
 * without a lock. A current log is streamed only as far as the range (`cli-read-file.ts`), Redis
 * read a page at a time.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { CliIo } from './cli-io.ts';
import { cliStore, withRedisReader, type CliStore } from './cli-store.ts';
import { readLogText, upgradeToCurrent } from './convert.ts';
import { generationToRead } from './generations.ts';
import { isChatId, pathInside } from './chat-id.ts';
import { parseReadRange } from './read-range.ts';
import { printFileRange } from './cli-read-file.ts';
import type { Event } from './format/current.ts';
import { CURRENT_VERSION } from './format/index.ts';

const USAGE =
  'usage: oda-gateway log read <chat id or file> [--offset N] [--length N] [--config FILE] [--data-dir DIR]';
/** Events read from Redis at once. */
const REDIS_PAGE = 1000;
const OPTIONS = new Set(['--offset', '--length', '--config', '--data-dir']);

/** The target and the options (`--name value` or `--name=value`); a message for anything else. */
function parseArgs(args: readonly string[]): { target: string; options: Map<string, string> } | string {
  const options = new Map<string, string>();
  const targets: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.startsWith('--')) {
      targets.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (!OPTIONS.has(name)) return `unknown option ${name}`;
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith('--'))) return `${name} needs a value`;
    options.set(name, value);
  }
  if (targets.length !== 1)
    return targets.length === 0 ? 'no chat id or file given' : 'give one chat id or file';
  return { target: targets[0]!, options };
}

/** True when `path` names a regular file (a chat id that happens to name a folder is looked up). */
function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The file that holds chat `id` in `dataDir`: the generation a gateway reads (`generationToRead`:
 * for an older log its converted generation, under today's name or an earlier build's, else the
 * generation the next conversion starts from), else undefined. Nothing is opened for writing, moved
 * or converted on disk: a gateway may be appending to the chat right now.
 */
async function chatFile(dataDir: string, id: string): Promise<string | undefined> {
  if (!isChatId(id)) return undefined;
  return generationToRead(pathInside(join(dataDir, 'chats'), id, '.jsonl'), id);
}

export async function logRead(args: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseArgs(args);
  if (typeof parsed === 'string') {
    io.err(parsed);
    io.err(USAGE);
    return 2;
  }
  const { target, options } = parsed;
  let range: { offset: number; length: number | undefined };
  try {
    range = parseReadRange(options.get('--offset'), options.get('--length'));
  } catch (e) {
    io.err((e as Error).message);
    return 2;
  }
  let file = target;
  if (!isFile(target)) {
    const where = cliStore(options.get('--config'), options.get('--data-dir'), io);
    if (where === undefined) return 1;
    if (where.kind === 'redis') return readRedis(where, target, range, io);
    const { dataDir } = where;
    let found;
    try {
      found = await chatFile(dataDir, target);
    } catch (e) {
      io.err(`${target}: ${(e as Error).message}`);
      return 1;
    }
    if (found === undefined) {
      io.err(`no chat "${target}" in ${dataDir} (and no such file)`);
      return 1;
    }
    file = found;
  }
  let read;
  let current;
  try {
    // A current log (a chat's own file, or its converted generation) is streamed; only an older
    // one, converted in memory, is read whole.
    if ((await printFileRange(file, range, io)) === 'printed') return 0;
    read = readLogText(readFileSync(file, 'utf8'));
    current = upgradeToCurrent(read.version, read.header, read.events);
  } catch (e) {
    // Not a chat log (another file, a version this build does not know): say so, no stack.
    io.err(`${target}: ${(e as Error).message}`);
    return 1;
  }
  // A torn last line (a write in progress, a crash) is reported, never cut: this command only reads.
  for (const p of read.problems) io.err(`warning: ${JSON.stringify(p)}`);
  io.err(`note: version ${read.version} log shown converted to version ${CURRENT_VERSION}`);
  const end = range.length === undefined ? undefined : range.offset + range.length;
  const events: Event[] = current.events.filter(
    (e) => e.seq >= range.offset && (end === undefined || e.seq < end),
  );
  for (const e of events) io.out(JSON.stringify(e));
  return 0;
}

/** Chat `id`'s events in `range` from a Redis store, read-only. */
async function readRedis(
  where: Extract<CliStore, { kind: 'redis' }>,
  id: string,
  range: { offset: number; length: number | undefined },
  io: CliIo,
): Promise<number> {
  return withRedisReader(where, io, async (backend) => {
    if ((await backend.header(id)) === undefined) {
      io.err(`no chat "${id}" in the Redis store at ${where.shown} (and no such file)`);
      return 1;
    }
    // A page at a time, as GET /v1/sessions/{id}/events reads: a long chat is never held whole.
    for (let at = range.offset, left = range.length; left === undefined || left > 0;) {
      const want = left === undefined ? REDIS_PAGE : Math.min(REDIS_PAGE, left);
      const events = await backend.read(id, at, want);
      for (const e of events) io.out(JSON.stringify(e));
      if (events.length < want) break;
      at += events.length;
      if (left !== undefined) left -= events.length;
    }
    return 0;
  });
}
