/**
 * The file store's chat index recovers from what happens to it and to the chat files outside the
 * gateway: an index damaged after a clean close, chat files added or removed by hand while the
 * gateway was stopped or running, and converted copies of older logs whose names a chat could have.
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

describe('FileLogBackend: converted copies never take a chat id', { timeout: 60_000 }, () => {
  const v4Text = fs.readFileSync(new URL('./__fixtures__/v4.jsonl', import.meta.url), 'utf8');
  const v4Events = v4Text.trimEnd().split('\n').length - 1;

  test('chat <older log>.v5 is a chat of its own, beside the converted copy of the older log', async () => {
    const { store: s, chats: dir } = setup();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'fixture-v4.jsonl'), v4Text);
    assert.equal((await s.header('fixture-v4'))?.version, 5, 'the v4 log is converted');
    assert.equal(await s.header('fixture-v4.v5'), undefined, 'no such chat yet');
    assert.equal(await s.create(hdr('fixture-v4.v5')), 'created');
    await s.append('fixture-v4.v5', [say('mine')], T0 + 5);
    assert.deepEqual(
      (await s.read('fixture-v4.v5', 0)).map((e) => e.type),
      ['message'],
    );
    assert.equal(await s.count('fixture-v4'), v4Events);
    assert.deepEqual(fs.readdirSync(dir).sort(), [
      'fixture-v4.jsonl',
      'fixture-v4.v5.jsonl',
      'fixture-v4@v5.jsonl',
    ]);
    assert.deepEqual(ids(await s.list()), ['fixture-v4', 'fixture-v4.v5']);
  });

  test('a converted copy an earlier build saved as <chat>.v5.jsonl is moved to its own name, appended events and all', async () => {
    const { dataDir, chats: dir } = setup();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'fixture-v4.jsonl'), v4Text);
    // What an earlier build left: the v5 generation under the old name, appended to since.
    const [head, ...events] = v4Text.trimEnd().split('\n');
    const appended = JSON.stringify({ seq: events.length, at: T0 + 50, ...say('appended by v5') });
    const generation = [
      JSON.stringify({ ...(JSON.parse(head!) as object), version: 5 }),
      ...events,
      appended,
    ];
    const legacy = path.join(dir, 'fixture-v4.v5.jsonl');
    fs.writeFileSync(legacy, `${generation.join('\n')}\n`);

    // A new start lists the chat once, with the events appended in its generation.
    const s = store(dataDir);
    const listed = await s.list();
    assert.deepEqual(
      listed.map((c) => [c.id, c.eventCount]),
      [['fixture-v4', v4Events + 1]],
    );
    assert.equal(fs.existsSync(legacy), false, 'the old name is free');
    assert.equal(
      fs.readFileSync(path.join(dir, 'fixture-v4@v5.jsonl'), 'utf8'),
      `${generation.join('\n')}\n`,
      'moved as it was',
    );
    assert.match(JSON.stringify(await s.read('fixture-v4', v4Events)), /appended by v5/);
    assert.equal(await s.create(hdr('fixture-v4.v5')), 'created');
    assert.deepEqual(ids(await s.list()), ['fixture-v4', 'fixture-v4.v5']);
  });

  test('asking for chat <older log>.v5 first frees the name from an earlier build’s converted copy', async () => {
    const { store: s, chats: dir } = setup();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'fixture-v4.jsonl'), v4Text);
    const v5 = v4Text.replace(/^\{"version":4,/, '{"version":5,');
    assert.notEqual(v5, v4Text);
    fs.writeFileSync(path.join(dir, 'fixture-v4.v5.jsonl'), v5);
    assert.equal(await s.header('fixture-v4.v5'), undefined);
    assert.equal(await s.create(hdr('fixture-v4.v5')), 'created');
    assert.equal((await s.header('fixture-v4.v5'))?.id, 'fixture-v4.v5');
    assert.equal(fs.readFileSync(path.join(dir, 'fixture-v4@v5.jsonl'), 'utf8'), v5);
    assert.equal(await s.count('fixture-v4'), v4Events, 'the older chat reads its moved copy');
  });
});
