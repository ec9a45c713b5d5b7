import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FileLogBackend } from './store-file.ts';
import { ManualClock } from '../lib/clock.ts';
import type { ChatListQuery, ChatSummary } from './chat-page.ts';
import { T0, hdr, say, rejectsWith } from './test-batches.ts';

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
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'oda-index-'));
  dirs.push(dataDir);
  return { dataDir, store: store(dataDir) };
}

/** Chats c0..c{n-1}, chat i last active at T0 + i * 10 with one event, every third in team `red`. */
async function chats(s: FileLogBackend, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = `c${i}`;
    await s.create(hdr(id, i % 3 === 0 ? { team: 'red', cwd: `/w/${i}` } : {}));
    await s.append(id, [say(`hello ${i}`)], T0 + i * 10);
  }
}

const ids = (cs: readonly ChatSummary[]) => cs.map((c) => c.id);

/** Every page of a query, following the cursor. */
async function allPages(s: FileLogBackend, q: Omit<ChatListQuery, 'after'>): Promise<string[][]> {
  const pages: string[][] = [];
  let after: ChatListQuery['after'];
  do {
    const page = await s.listPage({ ...q, ...(after ? { after } : {}) });
    pages.push(ids(page.chats));
    after = page.next;
  } while (after);
  return pages;
}

describe('FileLogBackend: the chat index', () => {
  test('pages list chats newest activity first, with what the header and the log say', async () => {
    const { store: s, dataDir } = setup();
    await chats(s, 7);
    await s.create(hdr('child', { parent: 'c6', createdAt: T0 + 1000 }));
    const page = await s.listPage({ limit: 3 });
    assert.deepEqual(ids(page.chats), ['child', 'c6', 'c5']);
    assert.deepEqual(page.chats[0], {
      id: 'child',
      createdAt: T0 + 1000,
      parent: 'c6',
      eventCount: 0,
      lastActivityAt: T0 + 1000,
    });
    assert.deepEqual(page.chats[1], {
      id: 'c6',
      createdAt: T0,
      team: 'red',
      cwd: '/w/6',
      eventCount: 1,
      lastActivityAt: T0 + 60,
    });
    assert.deepEqual(page.next, { lastActivityAt: T0 + 50, id: 'c5' });
    assert.deepEqual(await allPages(s, { limit: 3 }), [
      ['child', 'c6', 'c5'],
      ['c4', 'c3', 'c2'],
      ['c1', 'c0'],
    ]);
    assert.ok(fs.existsSync(path.join(dataDir, 'chat-index.sqlite')));
  });

  test('activity moves a chat to the top and updates its count; ties are ordered by id', async () => {
    const { store: s } = setup();
    await chats(s, 4);
    await s.append('c1', [say('again'), say('and again', 'model')], T0 + 500);
    const page = await s.listPage({ limit: 10 });
    assert.deepEqual(ids(page.chats), ['c1', 'c3', 'c2', 'c0']);
    assert.equal(page.chats[0]?.eventCount, 3);
    assert.equal(page.chats[0]?.lastActivityAt, T0 + 500);
    for (const id of ['a', 'b', 'c']) await s.create(hdr(id, { createdAt: T0 + 900 }));
    assert.deepEqual(ids((await s.listPage({ limit: 3 })).chats), ['c', 'b', 'a']);
  });

  test('a cursor holds its place while new chats arrive and other chats get busy', async () => {
    const { store: s } = setup();
    await chats(s, 9);
    const first = await s.listPage({ limit: 3 });
    assert.deepEqual(ids(first.chats), ['c8', 'c7', 'c6']);
    // Meanwhile: new chats, activity on a chat already shown and on one further down.
    await chats(s, 0);
    await s.create(hdr('new-1', { createdAt: T0 + 5000 }));
    await s.append('c7', [say('more')], T0 + 6000);
    await s.append('c1', [say('more')], T0 + 6001);
    const rest = [];
    for (let after = first.next; after;) {
      const page = await s.listPage({ limit: 3, after });
      rest.push(...ids(page.chats));
      after = page.next;
    }
    // Nothing shown twice, nothing new slipped in, the busy chat further down moved up out of this walk.
    assert.deepEqual(rest, ['c5', 'c4', 'c3', 'c2', 'c0']);
    assert.deepEqual(ids((await s.listPage({ limit: 3 })).chats), ['c1', 'c7', 'new-1']);
  });

  test('filters: team, id prefix, id substring, last-activity range; they combine', async () => {
    const { store: s } = setup();
    await chats(s, 12);
    await s.create(hdr('other-1', { createdAt: T0 + 1 }));
    const list = async (q: Omit<ChatListQuery, 'limit'>) =>
      ids((await s.listPage({ limit: 50, ...q })).chats);
    assert.deepEqual(await list({ team: 'red' }), ['c9', 'c6', 'c3', 'c0']);
    assert.deepEqual(await list({ idPrefix: 'c1' }), ['c11', 'c10', 'c1']);
    assert.deepEqual(await list({ idContains: 'er-' }), ['other-1']);
    assert.deepEqual(await list({ activeFrom: T0 + 30, activeTo: T0 + 60 }), ['c5', 'c4', 'c3']);
    assert.deepEqual(await list({ team: 'red', activeFrom: T0 + 30 }), ['c9', 'c6', 'c3']);
    assert.deepEqual(await list({ idPrefix: '%' }), [], 'no wildcard');
    assert.deepEqual(await allPages(s, { limit: 1, team: 'red', activeTo: T0 + 90 }), [
      ['c6'],
      ['c3'],
      ['c0'],
    ]);
  });

  test('an id prefix lists the same chats whether few or many ids start with it', async () => {
    const { store: s } = setup();
    // Few under `s.side-compaction-` (read from the primary key), and 520 under `w.` (past 500:
    // along the activity index); the ids just past each range's end must stay out.
    const made: string[] = [
      's.side-compaction-a',
      's.side-compaction-b',
      's.side-compaction-',
      's.side-compaction.x',
      's.side-compactio',
      'w',
      'w-',
      'x.1',
    ];
    for (let i = 0; i < 520; i++) made.push(`w.${String(i).padStart(3, '0')}`);
    let at = T0;
    for (const id of made) {
      await s.create(hdr(id));
      await s.append(id, [say('hi')], (at += 10));
    }
    const newestFirst = (prefix: string) => made.filter((id) => id.startsWith(prefix)).reverse();
    for (const prefix of ['s.side-compaction-', 's.side-compaction', 'w.', 'w.51', 'x.1', 'w.~', 'é']) {
      const pages = await allPages(s, { limit: 50, idPrefix: prefix });
      assert.deepEqual(pages.flat(), newestFirst(prefix), `prefix ${prefix}`);
    }
  });

  test('after a clean restart, pages come from the index alone (no chat file is read)', async () => {
    const { store: s, dataDir } = setup();
    await chats(s, 5);
    await s.close();
    // Empty the chat files (their names stay, for the start's check against the folder): a listing
    // that read them would find no events, or no chats.
    for (const name of fs.readdirSync(path.join(dataDir, 'chats'))) {
      fs.writeFileSync(path.join(dataDir, 'chats', name), '');
    }
    const again = store(dataDir);
    const page = await again.listPage({ limit: 10 });
    assert.deepEqual(ids(page.chats), ['c4', 'c3', 'c2', 'c1', 'c0']);
    assert.equal(page.chats[4]?.eventCount, 1);
    assert.equal(page.indexing, undefined);
    assert.equal(again.stats().openChats, 0, 'no chat was opened');
  });

  test('a deleted index is rebuilt from the chat files, counts and times included', async () => {
    const { store: s, dataDir } = setup();
    await chats(s, 6);
    await s.append('c2', [say('x'), say('y')], T0 + 900);
    const before = await s.listPage({ limit: 10 });
    await s.close();
    for (const f of fs.readdirSync(dataDir).filter((n) => n.startsWith('chat-index'))) {
      fs.rmSync(path.join(dataDir, f));
    }
    const logs: string[] = [];
    const again = store(dataDir, { log: (_level, message) => logs.push(message) });
    assert.deepEqual(await again.listPage({ limit: 10 }), before);
    assert.ok(logs.some((m) => /missing/.test(m)) && logs.some((m) => /up to date/.test(m)), logs.join('\n'));
    assert.deepEqual(
      await again.list(),
      [...before.chats].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
  });

  test('an index not closed cleanly is caught up: grown, new and removed chat files', async () => {
    const { store: s, dataDir } = setup();
    await chats(s, 4);
    await s.listPage({ limit: 1 }); // the rows are written
    // A crash: the first store is never closed; what happened after its last write is in the files only.
    await s.append('c0', [say('late 1'), say('late 2', 'model')], T0 + 700);
    fs.rmSync(path.join(dataDir, 'chats', 'c3.jsonl'));
    fs.writeFileSync(
      path.join(dataDir, 'chats', 'hand.jsonl'),
      `${JSON.stringify(hdr('hand', { team: 'blue' }))}\n${JSON.stringify({ seq: 0, at: T0 + 800, ...say('hi') })}\n`,
    );
    const again = store(dataDir);
    const page = await again.listPage({ limit: 10 });
    assert.deepEqual(ids(page.chats), ['hand', 'c0', 'c2', 'c1']);
    assert.deepEqual(
      page.chats.slice(0, 2).map((c) => [c.eventCount, c.lastActivityAt, c.team]),
      [
        [1, T0 + 800, 'blue'],
        [3, T0 + 700, 'red'],
      ],
    );
  });

  test('chat state in memory is bounded (least recently used dropped); dropped chats read and append fine', async () => {
    const { dataDir } = setup();
    const s = store(dataDir, { maxOpenChats: 5 });
    await chats(s, 20);
    assert.ok(s.stats().openChats <= 5, `open chats: ${s.stats().openChats}`);
    assert.deepEqual(
      (await s.read('c0', 0)).map((e) => e.seq),
      [0],
    );
    const [added] = await s.append('c0', [say('back')], T0 + 999);
    assert.equal(added?.seq, 1);
    assert.equal((await s.listPage({ limit: 1 })).chats[0]?.id, 'c0');
    assert.equal(s.stats().indexedChats, 20);
  });

  test('an index that cannot be opened never stops the log: appends work, listings are a 503', async () => {
    const { dataDir } = setup();
    fs.mkdirSync(path.join(dataDir, 'chat-index.sqlite')); // a folder where the database should be
    const logs: string[] = [];
    const s = store(dataDir, { log: (_level, message) => logs.push(message) });
    s.openIndex();
    await s.create(hdr('still'));
    const [stored] = await s.append('still', [say('works')], T0 + 1);
    assert.equal(stored?.seq, 0);
    await assert.rejects(s.listPage({ limit: 5 }), rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE'));
    assert.equal(logs.filter((m) => /chat index unavailable/.test(m)).length, 1, 'reported once');
    await s.close();
    fs.rmdirSync(path.join(dataDir, 'chat-index.sqlite'));
    const later = store(dataDir);
    assert.deepEqual(ids((await later.listPage({ limit: 5 })).chats), ['still'], 'rebuilt once it can be');
  });

  test('readLines: at most maxEvents, and maxBytes unless one event alone is larger', async () => {
    const { store: s } = setup();
    await s.create(hdr('r'));
    for (let i = 0; i < 30; i++) await s.append('r', [say(`m${i}`)], T0 + i);
    await s.append('r', [say('x'.repeat(5000))], T0 + 40);
    const lines = async (offset: number, maxEvents: number, maxBytes: number) => {
      const read = await s.readLines('r', offset, maxEvents, maxBytes);
      const out: string[] = [];
      for await (const line of read.lines) out.push(line);
      return { count: read.count, seqs: out.map((l) => (JSON.parse(l) as { seq: number }).seq), out };
    };
    assert.deepEqual((await lines(0, 10, 1e9)).seqs, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const one = Buffer.byteLength((await lines(0, 1, 1e9)).out[0]!) + 1;
    assert.deepEqual((await lines(5, 100, one * 3)).seqs, [5, 6, 7], 'three lines fit in three line sizes');
    assert.deepEqual((await lines(30, 100, 100)).seqs, [30], 'a larger event comes alone');
    assert.deepEqual((await lines(29, 100, 100)).seqs, [29], 'and not after another');
    assert.deepEqual(await lines(31, 10, 100), { count: 31, seqs: [], out: [] });
    const whole = await s.read('r', 0);
    assert.deepEqual(
      (await lines(0, 1000, 1e9)).out.map((l) => JSON.parse(l) as unknown),
      whole,
      'the lines are the stored events',
    );
  });
});
