import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { RedisLogBackend } from './store-redis.ts';
import type { ChatListQuery, ChatSummary } from './chat-page.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';
import { T0, hdr, say } from './test-batches.ts';

const opened: RedisLogBackend[] = [];
const prefixes: string[] = [];

function backend(
  prefix = uniquePrefix('paging'),
  extra: Partial<ConstructorParameters<typeof RedisLogBackend>[0]> = {},
) {
  if (!prefixes.includes(prefix)) prefixes.push(prefix);
  const b = new RedisLogBackend({ url: redisUrl!, prefix, ...extra });
  opened.push(b);
  return b;
}

after(async () => {
  await Promise.all(opened.map((b) => b.close()));
  await Promise.all(prefixes.map((p) => dropPrefix(p)));
});

/** Chats c0..c{n-1}, chat i last active at T0 + i * 10 with one event, every third in team `red`. */
async function chats(s: RedisLogBackend, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const id = `c${i}`;
    await s.create(hdr(id, i % 3 === 0 ? { team: 'red', cwd: `/w/${i}` } : {}));
    await s.append(id, [say(`hello ${i}`)], T0 + i * 10);
  }
}

const ids = (cs: readonly ChatSummary[]) => cs.map((c) => c.id);

async function allPages(s: RedisLogBackend, q: Omit<ChatListQuery, 'after'>): Promise<string[][]> {
  const pages: string[][] = [];
  let next: ChatListQuery['after'];
  do {
    const page = await s.listPage({ ...q, ...(next ? { after: next } : {}) });
    pages.push(ids(page.chats));
    next = page.next;
  } while (next);
  return pages;
}

describe('RedisLogBackend: paged listing', { skip: redisSkip }, () => {
  test('pages newest activity first, the same summaries as the file store gives', async () => {
    const s = backend();
    await chats(s, 7);
    await s.create(hdr('child', { parent: 'c6', createdAt: T0 + 1000 }));
    const page = await s.listPage({ limit: 3 });
    assert.deepEqual(ids(page.chats), ['child', 'c6', 'c5']);
    assert.deepEqual(page.chats[1], {
      id: 'c6',
      createdAt: T0,
      team: 'red',
      cwd: '/w/6',
      eventCount: 1,
      lastActivityAt: T0 + 60,
    });
    assert.deepEqual(page.chats[0]?.parent, 'c6');
    assert.deepEqual(await allPages(s, { limit: 3 }), [
      ['child', 'c6', 'c5'],
      ['c4', 'c3', 'c2'],
      ['c1', 'c0'],
    ]);
  });

  test('a cursor holds its place while another replica creates chats and appends', async () => {
    const s = backend();
    const other = backend(s.prefix);
    await chats(s, 9);
    const first = await s.listPage({ limit: 3 });
    await other.create(hdr('new-1', { createdAt: T0 + 5000 }));
    await other.append('c7', [say('more')], T0 + 6000);
    await other.append('c1', [say('more')], T0 + 6001);
    const rest: string[] = [];
    for (let next = first.next; next;) {
      const page = await s.listPage({ limit: 3, after: next });
      rest.push(...ids(page.chats));
      next = page.next;
    }
    assert.deepEqual(rest, ['c5', 'c4', 'c3', 'c2', 'c0']);
    const top = await s.listPage({ limit: 3 });
    assert.deepEqual(ids(top.chats), ['c1', 'c7', 'new-1']);
    assert.equal(top.chats[0]?.eventCount, 2);
  });

  test('filters: team (its own set), id prefix and substring, last-activity range', async () => {
    const s = backend();
    await chats(s, 12);
    await s.create(hdr('other-1', { createdAt: T0 + 1 }));
    const list = async (q: Omit<ChatListQuery, 'limit'>) =>
      ids((await s.listPage({ limit: 50, ...q })).chats);
    assert.deepEqual(await list({ team: 'red' }), ['c9', 'c6', 'c3', 'c0']);
    assert.deepEqual(await list({ idPrefix: 'c1' }), ['c11', 'c10', 'c1']);
    assert.deepEqual(await list({ idContains: 'er-' }), ['other-1']);
    assert.deepEqual(await list({ activeFrom: T0 + 30, activeTo: T0 + 60 }), ['c5', 'c4', 'c3']);
    assert.deepEqual(await list({ team: 'red', activeFrom: T0 + 30 }), ['c9', 'c6', 'c3']);
    assert.deepEqual(await allPages(s, { limit: 1, team: 'red', activeTo: T0 + 90 }), [
      ['c6'],
      ['c3'],
      ['c0'],
    ]);
    assert.deepEqual(await allPages(s, { limit: 2, idPrefix: 'c1' }), [['c11', 'c10'], ['c1']]);
  });

  test('chats from before paged listing (no activity set) are added by the first listing', async () => {
    const s = backend();
    await chats(s, 5);
    const redis = new Redis(redisUrl!);
    try {
      await redis.del(`${s.prefix}activity`, `${s.prefix}activity:team:red`);
    } finally {
      redis.disconnect();
    }
    const logs: string[] = [];
    const fresh = backend(s.prefix, { log: (_level, message) => logs.push(message) });
    assert.deepEqual(ids((await fresh.listPage({ limit: 10 })).chats), ['c4', 'c3', 'c2', 'c1', 'c0']);
    assert.deepEqual(ids((await fresh.listPage({ limit: 10, team: 'red' })).chats), ['c3', 'c0']);
    assert.ok(
      logs.some((m) => /incomplete/.test(m)),
      logs.join('\n'),
    );
  });

  test("a session's chats under an id prefix come from the id set, however many chats are newer", async () => {
    const s = backend();
    // The session's chats first: its main chat, a side chat, a sub-agent (team red) and a branch.
    await s.create(hdr('sess', { team: 'red' }));
    await s.append('sess', [say('main')], T0 + 10);
    await s.create(hdr('sess.side-title-1', { parent: 'sess' }));
    await s.append('sess.side-title-1', [say('title')], T0 + 20);
    await s.create(hdr('sess.agent-a1', { parent: 'sess', team: 'red' }));
    await s.append('sess.agent-a1', [say('agent')], T0 + 30);
    await s.create(hdr('sess.b0123456789ab', { parent: 'sess', team: 'red' }));
    await s.append('sess.b0123456789ab', [say('branch')], T0 + 40);
    await s.create(hdr('session-other'));
    await s.append('session-other', [say('another session')], T0 + 50);
    // Then more chats than a filtered scan of the activity set reads for one listing (20,000), all
    // newer: the activity order puts every one of them before the session's.
    const newer = 20_050;
    for (let i = 0; i < newer; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, newer - i) }, (_, k) =>
          s.create(hdr(`n${i + k}`, { createdAt: T0 + 1000 + i + k })),
        ),
      );
    }
    const list = async (q: Omit<ChatListQuery, 'limit'>, limit = 50) => s.listPage({ limit, ...q });
    const whole = await list({ idPrefix: 'sess.' });
    assert.deepEqual(ids(whole.chats), ['sess.b0123456789ab', 'sess.agent-a1', 'sess.side-title-1']);
    assert.equal(whole.next, undefined, 'no cursor: the page holds every chat under the prefix');
    assert.deepEqual(whole.chats[1], {
      id: 'sess.agent-a1',
      createdAt: T0,
      parent: 'sess',
      team: 'red',
      eventCount: 1,
      lastActivityAt: T0 + 30,
    });
    assert.deepEqual(ids((await list({ idPrefix: 'sess' })).chats), [
      'session-other',
      'sess.b0123456789ab',
      'sess.agent-a1',
      'sess.side-title-1',
      'sess',
    ]);
    // The other filters as the activity scan applies them.
    assert.deepEqual(ids((await list({ idPrefix: 'sess', team: 'red' })).chats), [
      'sess.b0123456789ab',
      'sess.agent-a1',
      'sess',
    ]);
    assert.deepEqual(ids((await list({ idPrefix: 'sess', activeFrom: T0 + 20, activeTo: T0 + 40 })).chats), [
      'sess.agent-a1',
      'sess.side-title-1',
    ]);
    assert.deepEqual(ids((await list({ idPrefix: 'sess', idContains: 'agent' })).chats), ['sess.agent-a1']);
    assert.deepEqual(await allPages(s, { limit: 2, idPrefix: 'sess' }), [
      ['session-other', 'sess.b0123456789ab'],
      ['sess.agent-a1', 'sess.side-title-1'],
      ['sess'],
    ]);
    assert.deepEqual(await allPages(s, { limit: 1, idPrefix: 'sess', team: 'red', activeTo: T0 + 40 }), [
      ['sess.agent-a1'],
      ['sess'],
    ]);
    // A broad prefix (more than 500 chats) is read along the activity set, newest first.
    const broad = await list({ idPrefix: 'n1' }, 3);
    assert.deepEqual(ids(broad.chats), ['n19999', 'n19998', 'n19997']);
    assert.ok(broad.next);
  });

  test('chats missing from the id set (created by an older gateway) are still listed, and added back', async () => {
    const s = backend();
    await chats(s, 5);
    await s.create(hdr('c1.side-title-x', { parent: 'c1' }));
    await s.append('c1.side-title-x', [say('title')], T0 + 100);
    await s.create(hdr('c1.lost'));
    const redis = new Redis(redisUrl!);
    try {
      await redis.del(`${s.prefix}ids`);
      // A chat whose keys were lost stays in the chat set: the rebuilt id set holds it too, so the
      // two count alike and prefixes are read from the id set again (listings skip it).
      await redis.del(`${s.prefix}chat:c1.lost:header`, `${s.prefix}chat:c1.lost:last`);
      const logs: string[] = [];
      const fresh = backend(s.prefix, { log: (_level, message) => logs.push(message) });
      // Listed by the activity scan while the id set lacks them (few chats: the listing waits for
      // the check, which adds them back).
      assert.deepEqual(ids((await fresh.listPage({ limit: 10, idPrefix: 'c1' })).chats), [
        'c1.side-title-x',
        'c1',
      ]);
      assert.ok(
        logs.some((m) => /incomplete/.test(m)),
        logs.join('\n'),
      );
      assert.deepEqual((await redis.zrange(`${s.prefix}ids`, 0, -1)).sort(), [
        'c0',
        'c1',
        'c1.lost',
        'c1.side-title-x',
        'c2',
        'c3',
        'c4',
      ]);
      assert.equal(await redis.zcard(`${s.prefix}ids`), await redis.scard(`${s.prefix}chats`));
      // Another gateway of the old kind creates a chat without an id-set member: the id set counts
      // fewer chats than the chat set, so the prefix listing does not trust it.
      await redis.zrem(`${s.prefix}ids`, 'c1.side-title-x');
      assert.deepEqual(ids((await fresh.listPage({ limit: 10, idPrefix: 'c1' })).chats), [
        'c1.side-title-x',
        'c1',
      ]);
    } finally {
      redis.disconnect();
    }
  });

  test('readLines: LRANGE windows, at most maxEvents, maxBytes unless one event alone is larger', async () => {
    const s = backend();
    await s.create(hdr('r'));
    for (let i = 0; i < 250; i += 50) {
      await s.append(
        'r',
        Array.from({ length: 50 }, (_, k) => say(`m${i + k}`)),
        T0 + i,
      );
    }
    await s.append('r', [say('x'.repeat(5000))], T0 + 400);
    const lines = async (offset: number, maxEvents: number, maxBytes: number) => {
      const read = await s.readLines('r', offset, maxEvents, maxBytes);
      const seqs: number[] = [];
      for await (const line of read.lines) seqs.push((JSON.parse(line) as { seq: number }).seq);
      return { count: read.count, seqs };
    };
    const many = await lines(0, 1000, 1e9);
    assert.equal(many.count, 251);
    assert.deepEqual(
      many.seqs,
      Array.from({ length: 251 }, (_, i) => i),
      'across three windows',
    );
    assert.deepEqual((await lines(95, 10, 1e9)).seqs, [95, 96, 97, 98, 99, 100, 101, 102, 103, 104]);
    assert.deepEqual((await lines(250, 5, 100)).seqs, [250], 'a larger event comes alone');
    assert.deepEqual((await lines(249, 5, 100)).seqs, [249], 'and not after another');
    assert.deepEqual((await lines(300, 5, 100)).seqs, []);
  });
});
