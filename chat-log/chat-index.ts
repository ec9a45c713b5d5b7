/**
 * The file store's lasting chat index: one row per chat (team, times, event count, parent, cwd and
 * the byte size of its log it accounts for) in an SQLite database beside the chats
 * (`dataDir/chat-index.sqlite`), so listing a page of chats never opens a chat file, also right
 * after a restart. It is derived data: the chat files stay the record, and the index is rebuilt
 * from them when it is missing, of another schema, damaged, or was not closed cleanly
 * (`chat-index-rebuild.ts`). Damage found while the index is in use (SQLite reports the file
 * corrupt, {@link isIndexDamage}) has the same cure: the store sets the index aside and rebuilds it.
 *
 * Writes are batched: a change is kept in memory and written with the others of the last
 * `FLUSH_MS` in one transaction, so a model call costs one map entry, not a database write; a page
 * flushes first, so this process always lists what it wrote. The database runs in WAL mode with
 * `synchronous=OFF`: no disk flush on the gateway's thread; what a crash or power loss takes is
 * caught at the next start (an index not closed cleanly is checked and caught up, one closed
 * cleanly is checked against the chat files' names) or, for damage a power loss left in a file
 * closed cleanly, when SQLite next reads the damaged part.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { ChatListQuery, ChatSummary } from './chat-page.ts';
import { NARROW_PREFIX, prefixEnd } from './chat-id.ts';

/** The index row of a chat: its summary and the bytes of its log file the summary accounts for. */
export interface IndexRow extends ChatSummary {
  size: number;
}

/** How long changes wait in memory before they are written together. */
export const FLUSH_MS = 100;

/** Bump when the table changes: an index of another schema is dropped and rebuilt. */
const SCHEMA = 1;

const CREATE = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chats (
  id TEXT PRIMARY KEY,
  team TEXT,
  created_at INTEGER NOT NULL,
  last_at INTEGER NOT NULL,
  event_count INTEGER NOT NULL,
  size INTEGER NOT NULL,
  parent TEXT,
  cwd TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chats_by_activity ON chats (last_at, id);
CREATE INDEX IF NOT EXISTS chats_by_team ON chats (team, last_at, id);`;

const COLUMNS = 'id, team, created_at, last_at, event_count, size, parent, cwd';

/**
 * True when `err` is SQLite saying the index file is damaged (`SQLITE_CORRUPT` and its variants,
 * `SQLITE_NOTADB`): only a rebuild cures that, where other errors (a full disk, a lock) may pass.
 */
export function isIndexDamage(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB');
}

/** Removes an index's files (the database and its WAL files). */
export function removeIndexFiles(path: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
}

/** Why the index must be built again from the chat files, if it must. */
export type IndexCondition = 'ready' | 'missing' | 'unclean';

type Param = string | number | null;

function rowOf(r: unknown): IndexRow | undefined {
  if (typeof r !== 'object' || r === null) return undefined;
  const o = r as Record<string, unknown>;
  const { id, team, created_at, last_at, event_count, size, parent, cwd } = o;
  if (
    typeof id !== 'string' ||
    typeof created_at !== 'number' ||
    typeof last_at !== 'number' ||
    typeof event_count !== 'number' ||
    typeof size !== 'number'
  ) {
    return undefined;
  }
  const row: IndexRow = { id, createdAt: created_at, eventCount: event_count, lastActivityAt: last_at, size };
  if (typeof parent === 'string') row.parent = parent;
  if (typeof team === 'string') row.team = team;
  if (typeof cwd === 'string') row.cwd = cwd;
  return row;
}

const params = (r: IndexRow): Param[] => [
  r.id,
  r.team ?? null,
  r.createdAt,
  r.lastActivityAt,
  r.eventCount,
  r.size,
  r.parent ?? null,
  r.cwd ?? null,
];

/** The SQLite chat index; see the file comment. */
export class ChatIndex {
  /** How the index was found when opened: `ready`, or why it must be rebuilt. */
  readonly condition: IndexCondition;
  private readonly db: Database.Database;
  private readonly pending = new Map<string, IndexRow | null>();
  private timer: NodeJS.Timeout | undefined;
  private readonly queries = new Map<string, Database.Statement>();
  private countBetween: Database.Statement | undefined;
  private readonly upsert: Database.Statement;
  private readonly remove: Database.Statement;
  private readonly one: Database.Statement;
  private readonly writeBatch: (rows: ReadonlyArray<[string, IndexRow | null]>) => void;

  /**
   * Opens (or creates) the index at `path`; `readOnly` opens an existing one without changing it.
   * A damaged file or one of another schema is replaced by an empty index (condition `missing`).
   */
  private readonly onError: (err: unknown) => void;

  constructor(
    readonly path: string,
    opts: { readOnly?: boolean; onError?: (err: unknown) => void } = {},
  ) {
    this.onError = opts.onError ?? (() => undefined);
    mkdirSync(dirname(path), { recursive: true });
    let opened: { db: Database.Database; condition: IndexCondition };
    try {
      opened = ChatIndex.openDb(path, opts.readOnly === true);
    } catch (err) {
      if (opts.readOnly) throw err;
      // A damaged index is only lost time: start an empty one and rebuild it from the chat files.
      removeIndexFiles(path);
      opened = ChatIndex.openDb(path, false);
    }
    this.db = opened.db;
    this.condition = opened.condition;
    this.upsert = this.db.prepare(
      `INSERT INTO chats (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET team = excluded.team, created_at = excluded.created_at,
         last_at = excluded.last_at, event_count = excluded.event_count, size = excluded.size,
         parent = excluded.parent, cwd = excluded.cwd`,
    );
    this.remove = this.db.prepare('DELETE FROM chats WHERE id = ?');
    this.one = this.db.prepare(`SELECT ${COLUMNS} FROM chats WHERE id = ?`);
    this.writeBatch = this.db.transaction((rows: ReadonlyArray<[string, IndexRow | null]>) => {
      for (const [id, row] of rows) {
        if (row) this.upsert.run(...params(row));
        else this.remove.run(id);
      }
    });
  }

  private static openDb(
    path: string,
    readOnly: boolean,
  ): { db: Database.Database; condition: IndexCondition } {
    const db = new Database(path, { readonly: readOnly, fileMustExist: readOnly, timeout: 5000 });
    try {
      if (readOnly) return { db, condition: 'ready' };
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = OFF');
      const version = db.pragma('user_version', { simple: true });
      let condition: IndexCondition = 'ready';
      if (version !== SCHEMA) {
        db.exec('DROP TABLE IF EXISTS chats; DROP TABLE IF EXISTS meta;');
        condition = 'missing';
      }
      db.exec(CREATE);
      db.pragma(`user_version = ${SCHEMA}`);
      if (condition === 'ready') {
        const state = db.prepare("SELECT value FROM meta WHERE key = 'state'").pluck().get();
        if (state !== 'clean') {
          condition = state === undefined ? 'missing' : 'unclean';
          // Power loss with synchronous=OFF may leave a damaged file: check it before trusting it.
          if (db.pragma('quick_check', { simple: true }) !== 'ok') throw new Error('chat index is damaged');
        }
      }
      return { db, condition };
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Records the index state: `open` while a process writes it, `clean` once closed complete. */
  setState(state: 'open' | 'clean' | 'rebuilding', owner = process.pid): void {
    this.flush();
    const put = this.db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
    this.db.transaction(() => {
      put.run('state', state);
      put.run('owner', String(owner));
    })();
  }

  /** The process that last opened the index for writing, and the state it left. */
  owner(): { state: string | undefined; pid: number | undefined } {
    const get = this.db.prepare('SELECT value FROM meta WHERE key = ?').pluck();
    const state = get.get('state');
    const pid = Number(get.get('owner'));
    return {
      state: typeof state === 'string' ? state : undefined,
      pid: Number.isSafeInteger(pid) ? pid : undefined,
    };
  }

  /** Records a chat's row (batched). */
  put(row: IndexRow): void {
    this.pending.set(row.id, row);
    this.schedule();
  }

  /** Forgets a chat (batched). */
  delete(id: string): void {
    this.pending.set(id, null);
    this.schedule();
  }

  /** The stored row of a chat (pending changes first). */
  get(id: string): IndexRow | undefined {
    const p = this.pending.get(id);
    if (p !== undefined) return p ?? undefined;
    return rowOf(this.one.get(id));
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      try {
        this.flush();
      } catch (err) {
        // Kept pending and tried again with the next change (a full disk may have room later).
        this.onError(err);
      }
    }, FLUSH_MS);
    this.timer.unref();
  }

  /** Writes the pending changes in one transaction; on failure they stay pending and it throws. */
  flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.pending.size === 0) return;
    const rows = [...this.pending];
    this.pending.clear();
    try {
      this.writeBatch(rows);
    } catch (err) {
      for (const [id, row] of rows) if (!this.pending.has(id)) this.pending.set(id, row);
      throw err;
    }
  }

  /** Writes many rows at once (a rebuild), bypassing the batch. */
  putMany(rows: readonly IndexRow[]): void {
    this.writeBatch(rows.map((r) => [r.id, r]));
  }

  /** One page in list order (newest activity first, then id descending); `limit + 1` rows at most. */
  page(q: ChatListQuery): IndexRow[] {
    this.flush();
    const where: string[] = [];
    const args: Param[] = [];
    if (q.team !== undefined) {
      where.push('team = ?');
      args.push(q.team);
    }
    if (q.after) {
      where.push('(last_at, id) < (?, ?)');
      args.push(q.after.lastActivityAt, q.after.id);
    }
    if (q.activeFrom !== undefined) {
      where.push('last_at >= ?');
      args.push(q.activeFrom);
    }
    if (q.activeTo !== undefined) {
      where.push('last_at < ?');
      args.push(q.activeTo);
    }
    if (q.idPrefix !== undefined) {
      const end = prefixEnd(q.idPrefix);
      if (end !== undefined && this.fewIdsBetween(q.idPrefix, end)) {
        // A narrow prefix (a session's side chats, its tree): its ids are read from the primary
        // key, where walking the activity index for them would read most of it.
        where.push('id >= ? AND id < ?');
        args.push(q.idPrefix, end);
      } else {
        where.push('substr(id, 1, ?) = ?');
        args.push(q.idPrefix.length, q.idPrefix);
      }
    }
    if (q.idContains !== undefined) {
      where.push('instr(id, ?) > 0');
      args.push(q.idContains);
    }
    // The filters run on the (covering) activity or team index alone; only the page's rows are read.
    const sql =
      `WITH hits AS (SELECT last_at, id FROM chats ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ` +
      'ORDER BY last_at DESC, id DESC LIMIT ?) ' +
      `SELECT ${COLUMNS.split(', ')
        .map((c) => `c.${c}`)
        .join(', ')} FROM hits JOIN chats c ON c.id = hits.id ORDER BY hits.last_at DESC, hits.id DESC`;
    let stmt = this.queries.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.queries.set(sql, stmt);
    }
    const out: IndexRow[] = [];
    for (const r of stmt.all(...args, q.limit + 1)) {
      const row = rowOf(r);
      if (row) out.push(row);
    }
    return out;
  }

  /** True when at most `NARROW_PREFIX` ids lie in [`from`, `to`) (read from the primary key). */
  private fewIdsBetween(from: string, to: string): boolean {
    this.countBetween ??= this.db.prepare(
      'SELECT count(*) FROM (SELECT 1 FROM chats WHERE id >= ? AND id < ? LIMIT ?)',
    );
    return Number(this.countBetween.pluck().get(from, to, NARROW_PREFIX + 1)) <= NARROW_PREFIX;
  }

  /**
   * At most `limit` indexed ids after `after` in id order (all ids a slice at a time, so a rebuild
   * listing 100,000 of them lets requests in between).
   */
  idsAfter(after: string | undefined, limit: number): string[] {
    this.flush();
    const ids =
      after === undefined
        ? this.db.prepare('SELECT id FROM chats ORDER BY id LIMIT ?').pluck().all(limit)
        : this.db.prepare('SELECT id FROM chats WHERE id > ? ORDER BY id LIMIT ?').pluck().all(after, limit);
    return ids.filter((id): id is string => typeof id === 'string');
  }

  /** Number of chats in the index. */
  count(): number {
    this.flush();
    const n = this.db.prepare('SELECT count(*) FROM chats').pluck().get();
    return typeof n === 'number' ? n : 0;
  }

  /** Writes what is pending and closes the database. */
  close(): void {
    if (!this.db.open) return;
    this.flush();
    this.db.close();
  }

  /** Closes the database without writing what is pending (a damaged index being set aside). */
  discard(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending.clear();
    try {
      if (this.db.open) this.db.close();
    } catch {
      // Closing a damaged database may fail too; its files are removed next.
    }
  }
}
