/**
 * `oda-gateway log list [--limit N] [--cursor C] [--team T] [--prefix P] [--contains S] [--from T]
 * [--to T] [--json] [--config FILE] [--data-dir DIR]`: one page of the chats of the gateway's store
 * (`cli-store.ts`: its config's data directory or Redis store, or the data directory `--data-dir`
 * names), newest activity first, from the same lasting index the gateway pages `GET /v1/sessions`
 * with (never one read per chat), filtered as that route filters (`--prefix`, `--contains`,
 * `--from` and `--to` are its `id_prefix`, `id_contains`, `from` and `to`, read the same way). The
 * chats are printed as JSON lines, and when more chats follow, the cursor of the next page on
 * stderr; with `--json`, one JSON object holds the chats and the cursor (`data`, `has_more`,
 * `next_cursor`, as the route answers). Safe beside a running gateway: the file store's index is
 * only checked against the chat files when the gateway that wrote it is gone; on Redis nothing is
 * written.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { CliIo } from './cli-io.ts';
import { cliStore, withRedisReader, type CliStore } from './cli-store.ts';
import { FileLogBackend } from './store-file.ts';
import {
  decodeCursor,
  encodeCursor,
  readIdFilter,
  readPageLimit,
  readTimeBound,
  type ChatCursor,
  type ChatListQuery,
  type ChatPage,
} from './chat-page.ts';

export const LOG_LIST_USAGE =
  'log list [--limit N] [--cursor C] [--team T] [--prefix P] [--contains S] [--from T] [--to T] [--json] [--config FILE] [--data-dir DIR]';
const USAGE = `usage: oda-gateway ${LOG_LIST_USAGE}`;
const FLAGS = [
  '--limit',
  '--cursor',
  '--team',
  '--prefix',
  '--contains',
  '--from',
  '--to',
  '--config',
  '--data-dir',
];
/** Options without a value. */
const SWITCHES = ['--json'];

/**
 * `--name value` and `--name=value` options and switches (`--json`, value ''), each at most once;
 * a message for anything else.
 */
function options(args: readonly string[]): Map<string, string> | string {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) return `unexpected argument ${JSON.stringify(a)}`;
    if (SWITCHES.includes(a)) {
      if (out.has(a)) return `${a} given twice`;
      out.set(a, '');
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq === -1 ? a : a.slice(0, eq);
    if (SWITCHES.includes(name)) return `${name} takes no value`;
    if (!FLAGS.includes(name)) return `unknown option ${name}`;
    const value = eq === -1 ? args[++i] : a.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith('--'))) return `${name} needs a value`;
    if (out.has(name)) return `${name} given twice`;
    out.set(name, value);
  }
  return out;
}

/** A `--cursor`, read as the route reads `cursor`; the message names the option. */
function readCursor(text: string): ChatCursor {
  try {
    return decodeCursor(text);
  } catch (err) {
    throw new Error(`--cursor: ${(err as Error).message}`);
  }
}

/**
 * Runs `log list`; returns the exit code (0 listed, 1 unreadable, 2 usage). With `--json`, a run that
 * lists nothing also says why as one JSON object on stdout (`error`: `kind` usage or unreadable, and
 * the `message` it wrote on stderr), so a script reading stdout learns it, as `log check --json` does.
 */
export async function logList(args: readonly string[], io: CliIo): Promise<number> {
  if (!args.includes('--json')) return listOnce(args, io);
  let printed = false;
  const said: string[] = [];
  const code = await listOnce(args, {
    out: (line) => {
      printed = true;
      io.out(line);
    },
    err: (line) => {
      said.push(line);
      io.err(line);
    },
  });
  if (code !== 0 && !printed) {
    const kind = code === 2 ? 'usage' : 'unreadable';
    io.out(JSON.stringify({ error: { kind, message: said.join('\n') } }));
  }
  return code;
}

async function listOnce(args: readonly string[], io: CliIo): Promise<number> {
  const opts = options(args);
  if (typeof opts === 'string') {
    io.err(opts);
    io.err(USAGE);
    return 2;
  }
  // Read as GET /v1/sessions reads its `limit`, `cursor`, `team`, `id_prefix`, `id_contains`, `from` and `to`.
  let query: ChatListQuery;
  try {
    query = { limit: readPageLimit(opts.get('--limit'), '--limit') };
    const cursor = opts.get('--cursor');
    if (cursor !== undefined) query.after = readCursor(cursor);
    // Any text, as GET /v1/sessions takes `team` (an empty one too: the chats whose team is "").
    const team = opts.get('--team');
    if (team !== undefined) query.team = team;
    const prefix = readIdFilter(opts.get('--prefix'), '--prefix');
    if (prefix !== undefined) query.idPrefix = prefix;
    const contains = readIdFilter(opts.get('--contains'), '--contains');
    if (contains !== undefined) query.idContains = contains;
    const from = readTimeBound(opts.get('--from'), '--from');
    if (from !== undefined) query.activeFrom = from;
    const to = readTimeBound(opts.get('--to'), '--to');
    if (to !== undefined) query.activeTo = to;
  } catch (err) {
    io.err((err as Error).message);
    return 2;
  }
  const print = (page: ChatPage) => (opts.has('--json') ? printJson(page, io) : printPage(page, io));
  const where = cliStore(opts.get('--config'), opts.get('--data-dir'), io);
  if (where === undefined) return 1;
  if (where.kind === 'redis') return listRedis(where, query, print, io);
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
    print(await backend.listPage(query));
    return 0;
  } catch (err) {
    io.err((err as Error).message);
    return 1;
  } finally {
    await backend.close();
  }
}

/** The page as JSON lines, the next page's cursor on stderr. */
function printPage(page: ChatPage, io: CliIo): void {
  for (const chat of page.chats) io.out(JSON.stringify(chat));
  if (page.next) io.err(`more chats: --cursor ${encodeCursor(page.next)}`);
}

/** The page as one JSON object, named as `GET /v1/sessions` names its answer's fields. */
function printJson(page: ChatPage, io: CliIo): void {
  io.out(
    JSON.stringify({
      data: page.chats,
      has_more: page.next !== undefined,
      next_cursor: page.next ? encodeCursor(page.next) : null,
      ...(page.indexing ? { indexing: true } : {}),
    }),
  );
}

/** The page from a Redis store, read-only (the activity sets' check is left to the gateways). */
async function listRedis(
  where: Extract<CliStore, { kind: 'redis' }>,
  query: ChatListQuery,
  print: (page: ChatPage) => void,
  io: CliIo,
): Promise<number> {
  return withRedisReader(where, io, async (backend) => {
    print(await backend.listPage(query));
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
