/**
 * The file store's chat index recovers from what happens to it and to the chat files outside the
 * gateway: an index damaged after a clean close, chat files added or removed by hand while the
 * gateway was stopped or running.
 */
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileLogBackend } from './store-file.ts';
import { ManualClock } from '../lib/clock.ts';
import type { ChatSummary } from './chat-page.ts';
import { T0, hdr, say } from './test-batches.ts';
import { copyChat, damageChatRows, markOpenBy } from './test-index-files.ts';

const dirs: string[] = [];
const opened: FileLogBackend[] = [];
after(async () => {
  await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function store(dataDir: string, extra: Partial<ConstructorParameters<typeof FileLogBackend>[0]> = {}) {
  const s = new FileLogBackend({ dataDir, clock: new ManualClock(T0), ...extra });
  opened.push(s);
  return s;
}

function setup() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oda-index-recovery-'));
  dirs.push(dataDir);
  return { dataDir, chats: path.join(dataDir, 'chats'), store: store(dataDir) };
}

/** Chats `ids`, the k-th last active at T0 + k * 10 with one event. */
async function chats(s: FileLogBackend, ids: readonly string[]): Promise<void> {
  for (const [k, id] of ids.entries()) {
    await s.create(hdr(id));
    await s.append(id, [say(`hello ${id}`)], T0 + k * 10);
  }
}

const ids = (cs: readonly ChatSummary[]) => cs.map((c) => c.id);

describe('FileLogBackend: the chat index recovers', { timeout: 60_000 }, () => {
  test('an index damaged after a clean close is set aside and rebuilt: listings answer, every start', async () => {
    const { store: s, dataDir } = setup();
    await chats(s, ['a', 'b', 'c']);
    await s.close();
    damageChatRows(dataDir);
    for (let start = 0; start < 2; start++) {
      const logs: string[] = [];
      const again = store(dataDir, { log: (_level, message) => logs.push(message) });
      again.openIndex();
      const page = await again.listPage({ limit: 10 });
      assert.deepEqual(ids(page.chats), ['c', 'b', 'a'], `start ${start}`);
      assert.equal(page.chats[0]?.eventCount, 1);
      if (start === 0) {
        assert.ok(
          logs.some((m) => /damaged/.test(m)),
          `the damage is reported:\n${logs.join('\n')}`,
        );
      }
      await again.close();
    }
  });

  test('a listing that finds the index damaged while it is in use answers from the rebuilt index', async () => {
    const { store: s, dataDir } = setup();
    await chats(s, ['a', 'b', 'c']);
    await s.close();
    // Only the order by activity is damaged: the check at start, which reads the ids, passes.
    damageChatRows(dataDir, 'activity');
    const logs: string[] = [];
    const again = store(dataDir, { log: (_level, message) => logs.push(message) });
    again.openIndex();
    await again.indexReady();
    assert.deepEqual(logs, [], 'nothing found at start');
    assert.deepEqual(ids((await again.listPage({ limit: 2 })).chats), ['c', 'b']);
    assert.ok(
      logs.some((m) => /damaged/.test(m)),
      logs.join('\n'),
    );
    assert.deepEqual(ids(await again.list()), ['a', 'b', 'c']);
  });

  test('chat files added and removed by hand while the store was closed (cleanly) are caught up at start', async () => {
    const { store: s, dataDir, chats: dir } = setup();
    await chats(s, ['c1', 'c2', 'c3']);
    await s.close();
    copyChat(dir, 'c1', 'c9');
    fs.rmSync(path.join(dir, 'c2.jsonl'));
    const again = store(dataDir);
    const page = await again.listPage({ limit: 10 });
    // c9 is a copy of c1: the same last activity, ordered by id.
    assert.deepEqual(ids(page.chats), ['c3', 'c9', 'c1']);
    assert.equal(page.indexing, undefined, 'a small check is waited for');
    assert.equal(await again.header('c2'), undefined);
    await again.close();
    // The catch-up lasts: the next clean start lists the same.
    assert.deepEqual(ids((await store(dataDir).listPage({ limit: 10 })).chats), ['c3', 'c9', 'c1']);
  });

  test('a chat whose file is removed while the store runs is dropped from the listing once a read finds it gone', async () => {
    const { store: s, chats: dir } = setup();
    await chats(s, ['kept', 'gone']);
    assert.deepEqual(ids((await s.listPage({ limit: 10 })).chats), ['gone', 'kept']);
    fs.rmSync(path.join(dir, 'gone.jsonl'));
    await assert.rejects(s.read('gone', 0), { code: 'ODA_ERR_NOT_FOUND', status: 404 });
    assert.deepEqual(ids((await s.listPage({ limit: 10 })).chats), ['kept']);
    // Streamed reads too.
    fs.rmSync(path.join(dir, 'kept.jsonl'));
    const read = await s.readLines('kept', 0, 10, 1e6);
    await assert.rejects(read.lines.next(), { code: 'ODA_ERR_NOT_FOUND', status: 404 });
    assert.deepEqual(ids((await s.listPage({ limit: 10 })).chats), []);
  });

  test('a row whose chat file is gone is dropped when the store finds the file missing on opening it', async () => {
    const { store: s, dataDir, chats: dir } = setup();
    await chats(s, ['x', 'y']);
    await s.close();
    fs.rmSync(path.join(dir, 'y.jsonl'));
    // A reader beside a running gateway does not check its index: y is listed until it is looked for.
    markOpenBy(dataDir, process.pid);
    const reader = store(dataDir, { indexCheck: 'when-owner-exited' });
    assert.deepEqual(ids(await reader.list()), ['x', 'y']);
    assert.equal(await reader.header('y'), undefined);
    assert.deepEqual(ids(await reader.list()), ['x']);
  });
});
