/**
 * What tests do to the file store's chat index and chat files behind the store's back: damage the
 * index, leave it as a running gateway holds it, copy a chat by hand.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

const indexFile = (dataDir: string) => path.join(dataDir, 'chat-index.sqlite');

/**
 * Overwrites the pages of the index's chats table and its indexes (or only of the index by
 * activity, which only the listings read) with 0xFF, leaving the rest (the schema, the state the
 * index was closed in) intact: SQLite opens the index and finds it damaged only when it reads the
 * chats. The index must have been closed cleanly, and hold few enough chats that each is one page.
 */
export function damageChatRows(dataDir: string, only?: 'activity'): void {
  const db = new Database(indexFile(dataDir));
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const state = db.prepare("SELECT value FROM meta WHERE key = 'state'").pluck().get();
  const roots = db
    .prepare(
      `SELECT rootpage FROM sqlite_master WHERE ${only ? "name = 'chats_by_activity'" : "tbl_name = 'chats'"}`,
    )
    .pluck()
    .all();
  assert.ok(roots.length > 0);
  db.close();
  assert.equal(state, 'clean', 'the index was closed cleanly');
  const bytes = fs.readFileSync(indexFile(dataDir));
  for (const root of roots as number[]) bytes.fill(0xff, (root - 1) * pageSize, root * pageSize);
  fs.writeFileSync(indexFile(dataDir), bytes);
}

/**
 * Records the index as held open by the live process `pid` (a running gateway): a reader that
 * leaves such an index alone (`indexCheck: 'when-owner-exited'`) neither checks nor rebuilds it.
 */
export function markOpenBy(dataDir: string, pid: number): void {
  const db = new Database(indexFile(dataDir));
  const put = db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
  put.run('state', 'open');
  put.run('owner', String(pid));
  db.close();
}

/** Copies chat `from`'s file to a chat `to` by hand (the header's id fixed, as an operator would). */
export function copyChat(chatsDir: string, from: string, to: string): void {
  const lines = fs.readFileSync(path.join(chatsDir, `${from}.jsonl`), 'utf8').split('\n');
  lines[0] = JSON.stringify({ ...(JSON.parse(lines[0]!) as object), id: to });
  fs.writeFileSync(path.join(chatsDir, `${to}.jsonl`), lines.join('\n'));
}
