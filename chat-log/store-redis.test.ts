import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { RedisLogBackend } from './store-redis.ts';
import { ChatLog } from './chat-log.ts';
import { AttachmentStore } from './attachments.ts';
import { ManualClock } from '../lib/clock.ts';
import type { Event, NewEvent } from './format/current.ts';
import { dropPrefix, keysUnder, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';
import { T0, hdr, say, request, rejectsWith } from './test-batches.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const textOf = (e: Event) =>
  e.type === 'message' && e.content[0]?.kind === 'text' ? e.content[0].text : undefined;

const opened: RedisLogBackend[] = [];
const prefixes: string[] = [];

/** A backend on the test Redis under a fresh prefix (or `prefix` to share one with another instance). */
function backend(
  prefix = uniquePrefix('store'),
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

describe('RedisLogBackend: create and header', { skip: redisSkip }, () => {
  test('creates once, then answers exists; header round-trips; count 0', async () => {
    const store = backend();
    assert.equal(await store.create(hdr('c1', { cwd: '/w' })), 'created');
    assert.equal(await store.create(hdr('c1', { cwd: '/other' })), 'exists');
    assert.deepEqual(await store.header('c1'), hdr('c1', { cwd: '/w' }));
    assert.deepEqual(
      await backend(store.prefix).header('c1'),
      hdr('c1', { cwd: '/w' }),
      'another instance reads it',
    );
    assert.equal(await store.count('c1'), 0);
  });

  test('concurrent creates of one id from two instances: exactly one wins', async () => {
    const a = backend();
    const b = backend(a.prefix);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).create(hdr('race', { cwd: `/c${i}` }))),
    );
    assert.equal(outcomes.filter((o) => o === 'created').length, 1);
  });

  test('seed events are copied in order, renumbered from 0, keeping their time', async () => {
    const store = backend();
    const seed: Event[] = [
      { seq: 7, at: T0 + 1, ...say('a') } as Event,
      { seq: 9, at: T0 + 2, ...say('b', 'model') } as Event,
    ];
    await store.create(hdr('child', { parent: 'p', seeded: true, inheritedEvents: 2 }), seed);
    const got = await store.read('child', 0);
    assert.deepEqual(
      got.map((e) => [e.seq, e.at, textOf(e)]),
      [
        [0, T0 + 1, 'a'],
        [1, T0 + 2, 'b'],
      ],
    );
    const [summary] = await store.list();
    assert.equal(summary?.lastActivityAt, T0 + 2);
  });

  test('an invalid header or seed creates nothing', async () => {
    const store = backend();
    await assert.rejects(
      store.create({ ...hdr('h1'), createdAt: -1 }),
      rejectsWith(500, 'ODA_ERR_LOG_WRITE'),
    );
    await assert.rejects(
      store.create(hdr('h1'), [{ seq: 0, at: T0, ...request({ t: -0 }) } as Event]),
      rejectsWith(400, 'ODA_ERR_LOG_WRITE'),
    );
    assert.deepEqual(await keysUnder(store.prefix), []);
    assert.equal(await store.header('h1'), undefined);
  });

  test('missing chats: header undefined, the rest 404', async () => {
    const store = backend();
    assert.equal(await store.header('nope'), undefined);
    await assert.rejects(store.count('nope'), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    await assert.rejects(store.read('nope', 0), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    await assert.rejects(store.read('nope', 0, 0), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    await assert.rejects(store.append('nope', [say('x')], T0), rejectsWith(404, 'ODA_ERR_NOT_FOUND'));
    assert.deepEqual(await keysUnder(store.prefix), []);
  });
});

describe('RedisLogBackend: appends', { skip: redisSkip }, () => {
  test('concurrent appends from two instances on one Redis get contiguous seq, nothing lost or doubled', async () => {
    const a = backend();
    const b = backend(a.prefix);
    await a.create(hdr('busy'));
    const batches = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        (i % 2 ? a : b).append('busy', i % 3 === 0 ? [say(`${i}a`), say(`${i}b`)] : [say(`${i}`)], T0 + i),
      ),
    );
    for (const batch of batches) {
      for (let k = 1; k < batch.length; k++)
        assert.equal(batch[k]?.seq, (batch[0]?.seq ?? 0) + k, 'one batch is contiguous');
    }
    const stored = await backend(a.prefix).read('busy', 0);
    assert.deepEqual(
      stored.map((e) => e.seq),
      Array.from({ length: 80 }, (_, i) => i),
    );
    const texts = stored.map(textOf).sort();
    const expected = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? [`${i}a`, `${i}b`] : [`${i}`]))
      .flat()
      .sort();
    assert.deepEqual(texts, expected);
    // What each append answered is exactly what was stored at those positions.
    for (const e of batches.flat()) assert.deepEqual(stored[e.seq], e);
  });

  test('appends stamp at = now and keep the given body exactly', async () => {
    const store = backend();
    await store.create(hdr('c'));
    const [stored] = await store.append('c', [say('héllo 🌍')], T0 + 42);
    assert.deepEqual(stored, { seq: 0, at: T0 + 42, ...say('héllo 🌍') });
    assert.deepEqual(await store.read('c', 0), [stored]);
  });

  test('a refused batch stores nothing and takes no sequence numbers', async () => {
    const store = backend();
    await store.create(hdr('c'));
    await store.append('c', [say('kept')], T0);
    const before = await keysUnder(store.prefix);
    await assert.rejects(
      store.append('c', [say('one'), say('two'), request({ temperature: -0 }), say('four')], T0 + 1),
      rejectsWith(400, 'ODA_ERR_LOG_WRITE', /events\[2\]\.settings\.temperature is negative zero/),
    );
    for (const bad of [
      request({ nested: { gone: undefined } }),
      request({ when: new Date(0) }),
      request({ big: NaN }),
    ]) {
      await assert.rejects(
        store.append('c', [say('one'), bad], T0 + 2),
        rejectsWith(400, 'ODA_ERR_LOG_WRITE'),
      );
    }
    await assert.rejects(
      store.append('c', [say('x'), { type: 'nope' } as unknown as NewEvent], T0),
      rejectsWith(500, 'ODA_ERR_LOG_WRITE'),
    );
    assert.deepEqual(await keysUnder(store.prefix), before);
    assert.equal(await store.count('c'), 1);
    const [next] = await store.append('c', [say('after')], T0 + 3);
    assert.equal(next?.seq, 1);
    assert.deepEqual((await store.read('c', 0)).map(textOf), ['kept', 'after']);
  });
});

describe('RedisLogBackend: reads and list', { skip: redisSkip }, () => {
  test('offset and length pick a window; past the end is empty', async () => {
    const store = backend();
    await store.create(hdr('r'));
    for (let i = 0; i < 10; i++) await store.append('r', [say(`m${i}`)], T0 + i);
    const seqs = async (o: number, l?: number) => (await store.read('r', o, l)).map((e) => e.seq);
    assert.deepEqual(await seqs(0), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(await seqs(3, 2), [3, 4]);
    assert.deepEqual(await seqs(8, 100), [8, 9]);
    assert.deepEqual(await seqs(9, 1), [9]);
    assert.deepEqual(await seqs(4, 0), []);
    assert.deepEqual(await seqs(10), []);
    assert.deepEqual(await seqs(1000, 5), []);
  });

  test('list summarises every chat with its last activity, sorted by id', async () => {
    const store = backend();
    await store.create(hdr('b', { parent: 'a' }));
    await store.create(hdr('a', { team: 'research', cwd: '/src/a' }));
    await store.append('a', [say('x')], T0 + 500);
    // The same fields as a page of listPage and the file store's list, the working folder included.
    assert.deepEqual(await store.list(), [
      { id: 'a', createdAt: T0, team: 'research', cwd: '/src/a', eventCount: 1, lastActivityAt: T0 + 500 },
      { id: 'b', createdAt: T0, parent: 'a', eventCount: 0, lastActivityAt: T0 },
    ]);
  });

  test('ids with path or key tricks are refused before touching Redis', async () => {
    const store = backend();
    for (const id of ['../x', 'a/b', '%2e%2e', 'a\0b', 'x'.repeat(129), '.', '..', '', 'a b', 'a*', 'a\nb']) {
      await assert.rejects(store.create(hdr(id)), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(store.append(id, [say('x')], T0), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(store.read(id, 0), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(store.getCheckpoint(id, 'm'), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
      await assert.rejects(
        store.withLock(id, async () => 1),
        rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'),
      );
      assert.equal(await store.header(id), undefined);
    }
    const cp = { model: '../../x', formatVersion: 4, build: 'b', position: -1, state: {} };
    await assert.rejects(store.putCheckpoint('c', cp), rejectsWith(400, 'ODA_ERR_INVALID_REQUEST'));
    assert.deepEqual(await keysUnder(store.prefix), []);
  });
});

describe('RedisLogBackend: checkpoints, locks, availability', { skip: redisSkip }, () => {
  test("a checkpoint of a model's new version drops that model's older versions, and nothing else", async () => {
    const store = backend();
    const cp = (model: string) => ({ model, formatVersion: 5, build: 'b1', position: 3, state: { model } });
    for (const model of ['messages.v6', 'messages.v7', 'totals.v1', 'messages2.v1'])
      await store.putCheckpoint('c', cp(model));
    await store.putCheckpoint('d', cp('messages.v7'));
    await store.putCheckpoint('c', cp('messages.v8'));
    const fields = await store.run((r) => r.hkeys(`${store.prefix}chat:c:checkpoints`));
    assert.deepEqual(fields.sort(), ['messages.v8', 'messages2.v1', 'totals.v1']);
    assert.deepEqual(await store.getCheckpoint('c', 'messages.v8'), cp('messages.v8'));
    assert.deepEqual(
      await store.getCheckpoint('d', 'messages.v7'),
      cp('messages.v7'),
      'another chat keeps its own',
    );
  });

  test('checkpoints round-trip and are shared; a damaged one reads as absent', async () => {
    const store = backend();
    const cp = { model: 'totals.v1', formatVersion: 4, build: 'b1', position: 12, state: { n: 3 } };
    assert.equal(await store.getCheckpoint('c', 'totals.v1'), undefined);
    await store.putCheckpoint('c', cp);
    await store.putCheckpoint('c', { ...cp, position: 13 });
    assert.deepEqual(await backend(store.prefix).getCheckpoint('c', 'totals.v1'), { ...cp, position: 13 });
    await store.run((r) =>
      r.hset(`${store.prefix}chat:c:checkpoints`, 'totals.v1', '{"model":"totals.v1","formatVer'),
    );
    assert.equal(await store.getCheckpoint('c', 'totals.v1'), undefined);
    await store.run((r) =>
      r.hset(`${store.prefix}chat:c:checkpoints`, 'totals.v1', JSON.stringify({ ...cp, position: 'x' })),
    );
    assert.equal(await store.getCheckpoint('c', 'totals.v1'), undefined);
  });

  test('withLock excludes across instances, is renewed past its lease, and is released on throw', async () => {
    // A lease long enough that a loaded machine's pause (the lease lapses only when a renewal, due
    // every third of it, is late by two thirds: 1 s here) does not let b in, short enough to outlast
    // twice in the test. 500 ms let b in once under a full suite on a busy 2-core machine.
    const a = backend(uniquePrefix('lock'), { lockTtlMs: 1500 });
    const b = backend(a.prefix, { lockTtlMs: 1500 });
    await a.create(hdr('l'));
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const first = a.withLock('l', async () => {
      order.push('a:start');
      entered();
      await gate;
      await a.append('l', [say('inside')], T0);
      order.push('a:end');
    });
    await inside;
    const second = b.withLock('l', async () => {
      order.push('b');
    });
    await b.withLock('other', async () => order.push('b:other'));
    // Hold past two leases: renewal must keep b out.
    await new Promise((r) => setTimeout(r, 3400));
    release();
    await Promise.all([first, second]);
    assert.deepEqual(order, ['a:start', 'b:other', 'a:end', 'b']);
    await assert.rejects(
      b.withLock('l', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await a.withLock('l', async () => 'still usable'), 'still usable');
    assert.deepEqual(
      (await keysUnder(a.prefix)).filter((k) => k.endsWith(':lock')),
      [],
      'no lock left behind',
    );
  });

  test('a lock that cannot be had within its wait (the lease and a margin) is a 503, not a hang', async () => {
    const a = backend();
    // The wait asked for is shorter than the lease: the lock waits the lease and a margin instead.
    const b = backend(a.prefix, { lockTtlMs: 300, lockWaitMs: 150 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const held = a.withLock('x', async () => {
      entered();
      await gate;
    });
    await inside;
    const started = Date.now();
    await assert.rejects(
      b.withLock('x', async () => 1),
      rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE', /busy/),
    );
    const waited = Date.now() - started;
    assert.ok(waited >= 750 && waited < 3000, `waited ${waited} ms`);
    release();
    await held;
  });

  test('the lock of a replica killed right after renewing it is outwaited, not a 503', async () => {
    // A wait asked to equal the lease, as it once was by default: the lock waits longer.
    const b = backend(uniquePrefix('lock'), { lockTtlMs: 1000, lockWaitMs: 1000 });
    await b.create(hdr('d'));
    const key = `${b.prefix}chat:d:lock`;
    // Another replica holds the chat's lock (its token, its lease) ...
    await b.run((r) => r.set(key, 'token-of-a-replica', 'PX', 1000));
    const started = Date.now();
    const taking = b.withLock('d', async () => 'got it');
    // ... renews it while this request waits, and is killed at once: the key stays a whole lease.
    await new Promise((r) => setTimeout(r, 100));
    await b.run((r) => r.pexpire(key, 1000));
    assert.equal(await taking, 'got it');
    const waited = Date.now() - started;
    assert.ok(waited >= 1000, `the lease ran out first (${waited} ms)`);
    assert.deepEqual(
      (await keysUnder(b.prefix)).filter((k) => k.endsWith(':lock')),
      [],
      'released',
    );
  });

  test('a second ChatLog on the same Redis sees the first one’s events in its read models', async () => {
    const prefix = uniquePrefix('chatlog');
    const dir = tempDir('oda-redis-att-');
    const clock = new ManualClock(T0);
    const make = () =>
      new ChatLog({
        backend: backend(prefix),
        attachments: new AttachmentStore({ dir }),
        clock,
        build: 'test',
      });
    const one = make();
    const two = make();
    await one.createChat({ id: 'shared' });
    assert.equal((await two.open('shared'))?.count, 0);
    await one.append('shared', [say('hello'), say('hi', 'model')]);
    const seen = await two.open('shared');
    assert.equal(seen?.count, 2);
    assert.equal(seen?.messages.messages.length, 2);
    await two.append('shared', [say('more')]);
    assert.equal((await one.open('shared'))?.messages.messages.length, 3);
  });

  test('an unreachable Redis answers 503 quickly and ping is false', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const dead = new RedisLogBackend({ url: `redis://127.0.0.1:${port}`, readyWaitMs: 300 });
    try {
      const started = Date.now();
      assert.equal(await dead.ping(), false);
      await assert.rejects(dead.count('c'), rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE'));
      await assert.rejects(dead.create(hdr('c')), rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE'));
      await assert.rejects(
        dead.withLock('c', async () => 1),
        rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE'),
      );
      assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
    } finally {
      await dead.close();
    }
  });
});
