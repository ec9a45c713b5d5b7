/**
 * The Redis store when a connection drops between a command and its reply (redis-cut-proxy.ts cuts
 * it at that moment): nothing is applied twice, an append or a lock whose reply was lost finds what
 * its first run did, and what cannot be told is a 503, never a duplicate or a wait on itself.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisLogBackend, type RedisLogBackendOptions } from './store-redis.ts';
import type { Event } from './format/current.ts';
import { dropPrefix, keysUnder, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';
import { redisCutProxy, type RedisCutProxy } from '../test/helpers/redis-cut-proxy.ts';
import { T0, hdr, say, rejectsWith } from './test-batches.ts';
import { mayHaveBeenApplied, unavailable } from './store-redis-replies.ts';

const textOf = (e: Event) =>
  e.type === 'message' && e.content[0]?.kind === 'text' ? e.content[0].text : undefined;
const texts = (events: Event[]) => events.map((e) => `${e.seq}:${textOf(e)}`);

const opened: RedisLogBackend[] = [];
const proxies: RedisCutProxy[] = [];
const prefixes: string[] = [];

after(async () => {
  await Promise.all(opened.map((b) => b.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(prefixes.map((p) => dropPrefix(p)));
});

/** A backend through a fresh cut proxy, and one on Redis directly under the same prefix. */
async function setup(extra: Partial<RedisLogBackendOptions> = {}) {
  const proxy = await redisCutProxy(redisUrl!);
  proxies.push(proxy);
  const prefix = uniquePrefix('dropped');
  prefixes.push(prefix);
  const cut = new RedisLogBackend({ url: proxy.url, prefix, readyWaitMs: 3000, ...extra });
  const direct = new RedisLogBackend({ url: redisUrl!, prefix });
  opened.push(cut, direct);
  return { proxy, cut, direct, prefix };
}

/** The command that appends the message `text` (the batch's line is in the script's arguments). */
const appendOf = (text: string) => (command: string) =>
  command.includes('RPUSH') && command.includes(`"text":"${text}"`);

/** The first command on the chat's lock key, the one that takes the lock. */
const takesLock = (id: string) => (command: string) => command.includes(`chat:${id}:lock`);

const limits = { timeout: 20_000 };

/** Waits until `ok()` holds (the client reconnected), failing after `ms`. */
async function until(ok: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    assert.ok(Date.now() < end, 'not reconnected in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('RedisLogBackend: a connection dropped before the reply', { skip: redisSkip }, () => {
  test(
    'an append without an expected count is stored once, not renumbered and stored again',
    limits,
    async () => {
      const { proxy, cut, direct } = await setup();
      await cut.create(hdr('c'));
      await cut.append('c', [say('one')], T0);
      const dropped = proxy.cutOn(appendOf('two'));
      const stored = await cut.append('c', [say('two')], T0 + 1);
      await dropped;
      assert.equal(proxy.cuts, 1);
      assert.deepEqual(texts(stored), ['1:two']);
      assert.deepEqual(texts(await direct.read('c', 0)), ['0:one', '1:two']);
    },
  );

  test('an append with the expected count is acknowledged, not a false 503', limits, async () => {
    const { proxy, cut, direct } = await setup();
    await cut.create(hdr('c'));
    await cut.append('c', [say('one')], T0);
    const dropped = proxy.cutOn(appendOf('two'));
    const stored = await cut.append('c', [say('two'), say('three', 'model')], T0 + 1, 1);
    await dropped;
    assert.deepEqual(texts(stored), ['1:two', '2:three']);
    assert.deepEqual(texts(await direct.read('c', 0)), ['0:one', '1:two', '2:three']);
  });

  test(
    'another replica appending before the repeat: the batch is recognised where it landed',
    limits,
    async () => {
      const { proxy, cut, direct } = await setup();
      await cut.create(hdr('c'));
      const dropped = proxy.cutOn(appendOf('mine'), { thenRefuse: true });
      const mine = cut.append('c', [say('mine')], T0 + 1);
      await dropped;
      await direct.append('c', [say('theirs')], T0 + 2);
      proxy.accept();
      assert.deepEqual(texts(await mine), ['0:mine']);
      assert.deepEqual(texts(await direct.read('c', 0)), ['0:mine', '1:theirs']);
    },
  );

  test(
    'a batch that never reached Redis is stored by the repeat, renumbered after a newcomer',
    limits,
    async () => {
      const { proxy, cut, direct } = await setup();
      await cut.create(hdr('c'));
      const dropped = proxy.cutOn(appendOf('mine'), { when: 'before-run', thenRefuse: true });
      const mine = cut.append('c', [say('mine')], T0 + 1);
      await dropped;
      await direct.append('c', [say('theirs')], T0 + 2);
      proxy.accept();
      assert.deepEqual(texts(await mine), ['1:mine']);
      assert.deepEqual(texts(await direct.read('c', 0)), ['0:theirs', '1:mine']);

      // Numbered under the lock from a count that no longer holds: a 503, nothing stored.
      const again = proxy.cutOn(appendOf('late'), { when: 'before-run', thenRefuse: true });
      const late = cut.append('c', [say('late')], T0 + 3, 2);
      await again;
      await direct.append('c', [say('first')], T0 + 4);
      proxy.accept();
      await assert.rejects(late, rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE', /changed/));
      assert.deepEqual(texts(await direct.read('c', 0)), ['0:theirs', '1:mine', '2:first']);
    },
  );

  test(
    'Redis not back in time: a 503 that says the outcome is unknown, and no copy later',
    limits,
    async () => {
      const { proxy, cut, direct } = await setup({ readyWaitMs: 300 });
      await cut.create(hdr('c'));
      const dropped = proxy.cutOn(appendOf('lost'), { thenRefuse: true });
      const started = Date.now();
      await assert.rejects(
        cut.append('c', [say('lost')], T0 + 1),
        rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE', /may or may not have been applied/),
      );
      await dropped;
      assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
      proxy.accept();
      await until(() => cut.ping());
      // Back on its feet, the next append comes after the stored batch, which is there once.
      const next = await cut.append('c', [say('next')], T0 + 2);
      assert.deepEqual(texts(next), ['1:next']);
      assert.deepEqual(texts(await direct.read('c', 0)), ['0:lost', '1:next']);
    },
  );

  test('a create whose reply was lost answers created, with its seed stored once', limits, async () => {
    const { proxy, cut, direct } = await setup();
    const seed = [{ seq: 0, at: T0, ...say('seeded') } as Event];
    const dropped = proxy.cutOn((c) => c.includes(':header') && c.includes('"id":"fresh"'));
    assert.equal(await cut.create(hdr('fresh', { seeded: true, inheritedEvents: 1 }), seed), 'created');
    await dropped;
    assert.equal(proxy.cuts, 1);
    assert.deepEqual(texts(await direct.read('fresh', 0)), ['0:seeded']);
    assert.equal(await cut.create(hdr('fresh')), 'exists');
  });

  test(
    'a lock whose reply was lost is held at once, not waited for until its lease runs out',
    limits,
    async () => {
      const { proxy, cut, direct, prefix } = await setup({ lockTtlMs: 10_000, lockWaitMs: 10_000 });
      await cut.create(hdr('c'));
      const dropped = proxy.cutOn(takesLock('c'));
      const started = Date.now();
      assert.equal(await cut.withLock('c', async () => 'inside'), 'inside');
      await dropped;
      assert.equal(proxy.cuts, 1);
      assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
      assert.deepEqual(
        (await keysUnder(prefix)).filter((k) => k.endsWith(':lock')),
        [],
        'released',
      );
      // Another replica gets it right away.
      assert.equal(await direct.withLock('c', async () => 'next'), 'next');
    },
  );

  test('a lock taken just before Redis went away is freed once it is back', limits, async () => {
    const { proxy, cut, direct, prefix } = await setup({ readyWaitMs: 300, lockTtlMs: 30_000 });
    await cut.create(hdr('c'));
    const dropped = proxy.cutOn(takesLock('c'), { thenRefuse: true });
    await assert.rejects(
      cut.withLock('c', async () => 'never'),
      rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE'),
    );
    await dropped;
    proxy.accept();
    // The release goes out once the connection is back: the other replica does not wait 30 s.
    const started = Date.now();
    assert.equal(await direct.withLock('c', async () => 'got it'), 'got it');
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    assert.deepEqual(
      (await keysUnder(prefix)).filter((k) => k.endsWith(':lock')),
      [],
    );
  });

  test('a read whose reply was lost is read again', limits, async () => {
    const { proxy, cut } = await setup();
    await cut.create(hdr('c'));
    await cut.append('c', [say('one')], T0);
    const dropped = proxy.cutOn((c) => /\blrange\b/i.test(c) && c.includes('chat:c:events'));
    assert.deepEqual(texts(await cut.read('c', 0)), ['0:one']);
    await dropped;
  });

  test('a one-shot command (a counter) whose reply was lost is a 503, never run twice', limits, async () => {
    const { proxy, cut, direct, prefix } = await setup();
    const counted = proxy.cutOn((c) => /\bincr\b/i.test(c) && c.includes('counter'));
    const lost = await cut
      .run((r) => r.incr(`${prefix}counter`))
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    rejectsWith(503, 'ODA_ERR_STORE_UNAVAILABLE', /may or may not have been applied/)(lost);
    assert.ok(mayHaveBeenApplied(lost), 'the caller can tell a write that may have run (no retry)');
    assert.ok(!mayHaveBeenApplied(unavailable('not connected')), 'from one that did not');
    await counted;
    assert.equal(await direct.run((r) => r.get(`${prefix}counter`)), '1');
  });
});
