/**
 * `oda-gateway log list [--limit N] [--cursor C] [--team T] [--prefix P] [--config FILE] [--data-dir DIR]`:
 * one page of the chats of the gateway's store (`cli-store.ts`: its config's data directory or
 * Redis store, or the data directory `--data-dir` names), newest activity first, as JSON lines, from
 * the same lasting index the gateway pages `GET /v1/sessions` with (never one read per chat). When
 * more chats follow, the cursor of the next page is printed on stderr. Safe beside a running
 * gateway: the file store's index is only checked against the chat files when the gateway that
 * wrote it is gone; on Redis nothing is written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CliIo } from './cli-io.ts';
import { cliStore, withRedisReader, type CliStore } from './cli-store.ts';
import { FileLogBackend } from './store-file.ts';
import {
  DEFAULT_PAGE_LIMIT,
  MAX_PAGE_LIMIT,
  decodeCursor,
  encodeCursor,
  type ChatListQuery,
  type ChatPage,
} from './chat-page.ts';

const USAGE =
  'usage: oda-gateway log list [--limit N] [--cursor C] [--team T] [--prefix P] [--config FILE] [--data-dir DIR]';
const FLAGS = ['--limit', '--cursor', '--team', '--prefix', '--config', '--data-dir'];

/** `--name value` and `--name=value` options, each at most once; a message for anything else. */
function options(args: readonly string[]): Map<string, string> | string {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) return `unexpected argument ${JSON.stringify(a)}`;
    const eq = a.indexOf('=');
    const name = eq === -1 ? a : a.slice(0, eq);
    if (!FLAGS.includes(name)) return `unknown option ${name}`;
    const value = eq === -1 ? args[++i] : a.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith('--'))) return `${name} needs a value`;
    if (out.has(name)) return `${name} given twice`;
    out.set(name, value);
  }
  return out;
}

/** Runs `log list`; returns the exit code (0 listed, 1 unreadable, 2 usage). */
export async function logList(args: readonly string[], io: CliIo): Promise<number> {
  const opts = options(args);
  if (typeof opts === 'string') {
    io.err(opts);
    io.err(USAGE);
    return 2;
  }
  // Read as GET /v1/sessions reads its `limit`, `team` and `id_prefix`: digits only, 1-128 characters.
  const limitText = opts.get('--limit');
  const limit =
    limitText === undefined ? DEFAULT_PAGE_LIMIT : /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : 0;
  if (limit < 1 || limit > MAX_PAGE_LIMIT) {
    io.err(`--limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}, got ${JSON.stringify(limitText)}`);
    return 2;
  }
  for (const name of ['--team', '--prefix']) {
    const v = opts.get(name);
    if (v !== undefined && (v.length < 1 || v.length > 128)) {
      io.err(`${name} must be 1-128 characters`);
      return 2;
    }
  }
  const query: ChatListQuery = { limit };
  try {
    const cursor = opts.get('--cursor');
    if (cursor !== undefined) query.after = decodeCursor(cursor);
  } catch (err) {
    io.err(`--cursor: ${(err as Error).message}`);
    return 2;
  }
  const team = opts.get('--team');
  if (team !== undefined) query.team = team;
  const prefix = opts.get('--prefix');
  if (prefix !== undefined) query.idPrefix = prefix;
  const where = cliStore(opts.get('--config'), opts.get('--data-dir'), io);
  if (where === undefined) return 1;
  if (where.kind === 'redis') return listRedis(where, query, io);
  const { dataDir } = where;
  if (!existsSync(join(dataDir, 'chats'))) {
    io.err(`no chat log in ${dataDir} (no chats folder)`);
    return 1;
  }
  const backend = new FileLogBackend({
    dataDir,
    indexCheck: 'when-owner-exited',
    log: (_level, message, fields) => io.err(`${message} ${JSON.stringify(fields)}`),
  });
  try {
    await backend.indexReady();
    printPage(await backend.listPage(query), io);
    return 0;
  } catch (err) {
    io.err((err as Error).message);
    return 1;
  } finally {
    await backend.close();
  }
}

function printPage(page: ChatPage, io: CliIo): void {
  for (const chat of page.chats) io.out(JSON.stringify(chat));
  if (page.next) io.err(`more chats: --cursor ${encodeCursor(page.next)}`);
}

/** The page from a Redis store, read-only (the activity sets' check is left to the gateways). */
async function listRedis(
  where: Extract<CliStore, { kind: 'redis' }>,
  query: ChatListQuery,
  io: CliIo,
): Promise<number> {
  return withRedisReader(where, io, async (backend) => {
    printPage(await backend.listPage(query), io);
    const missing = await backend.unindexedChats();
    if (missing > 0) {
      io.err(
        `note: ${missing} chat(s) are not in the activity index yet and may be missing from this page ` +
          '(a gateway adds them when it starts)',
      );
    }
    return 0;
  });
}
