import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  awaitExtendedBind,
  BoundPrefixes,
  longestVerified,
  PendingBinds,
  wirePrefixHashes,
  type PrefixEntry,
} from './bound-prefixes.ts';

const entry = (wireCount: number, chatId = 'c'): PrefixEntry => ({
  wireCount,
  hash: `h${wireCount}`,
  loggedCount: wireCount,
  chatId,
});

test('a chat keeps 8 prefixes, newest first, their lengths spread out', () => {
  const p = new BoundPrefixes();
  for (let n = 1; n <= 20; n++) p.remember('c', entry(n * 2), false);
  const kept = p.candidates('c').map((e) => e.wireCount);
  assert.equal(kept.length, 8);
  assert.equal(kept[0], 40, 'the newest first');
  // Dropping the one nearest another keeps the lengths spread over the whole range.
  assert.ok(Math.min(...kept) <= 8, `an early length stays: ${kept.join(',')}`);
});

test('a compaction forgets the earlier prefixes; the same length is kept once', () => {
  const p = new BoundPrefixes();
  p.remember('c', entry(4), false);
  p.remember('c', entry(6), false);
  p.remember('c', { ...entry(6), hash: 'other' }, false);
  assert.deepEqual(
    p.candidates('c').map((e) => [e.wireCount, e.hash]),
    [
      [6, 'other'],
      [4, 'h4'],
    ],
  );
  p.remember('c', entry(2), true);
  assert.deepEqual(
    p.candidates('c').map((e) => e.wireCount),
    [2],
  );
});

test('only the newest prefix may lead into a branch', () => {
  const p = new BoundPrefixes();
  p.remember('c', entry(4, 'c.b1'), false);
  p.remember('c', entry(6, 'c'), false);
  p.remember('c', entry(8, 'c.b2'), false);
  assert.deepEqual(
    p.candidates('c').map((e) => `${e.wireCount}@${e.chatId}`),
    ['8@c.b2', '6@c'],
  );
});

test('the longest prefix whose hash matches wins', async () => {
  const wire = [{ a: 1 }, { b: 2 }, { c: 3 }];
  const hashes = await wirePrefixHashes(wire, [1, 2, 3], undefined);
  const candidates = [1, 2, 3].map((n) => ({ ...entry(n), hash: hashes.at.get(n)! }));
  candidates[2] = { ...candidates[2]!, hash: 'stale' };
  assert.equal(longestVerified(candidates, hashes.at)?.wireCount, 2);
  assert.equal(hashes.full, hashes.at.get(3));
  const bytes = Buffer.from(JSON.stringify(wire));
  const ranges = [1, 8, 9, 16, 17, 24];
  const sent = await wirePrefixHashes(wire, [2], undefined, { raw: bytes, ranges });
  assert.notEqual(sent.at.get(2), hashes.at.get(2), 'hashes of bytes and of JSON never compare equal');
  assert.equal(bytes.subarray(ranges[4], ranges[5]).toString(), '{"c":3}');
});

test('a bind in progress is seen only by binds that start after it, and is gone once settled', async () => {
  const p = new PendingBinds();
  const a = p.start('c', 3, 'h3');
  assert.deepEqual(a.earlier, []);
  const b = p.start('c', 5, 'h5');
  assert.deepEqual(
    b.earlier.map((e) => e.wireCount),
    [3],
  );
  assert.equal(p.start('other', 1, 'x').earlier.length, 0, 'per chat');
  assert.equal(p.count('c'), 2);
  let aDone = false;
  void b.earlier[0]!.done.then(() => (aDone = true));
  a.settle();
  a.settle();
  await Promise.resolve();
  assert.equal(aDone, true);
  assert.equal(p.count('c'), 1);
  assert.deepEqual(
    p.start('c', 7, 'h7').earlier.map((e) => e.wireCount),
    [5],
  );
});

test('the longest bind in progress the request starts with, beyond what is verified', () => {
  const pending = [3, 5, 9].map((n) => ({ wireCount: n, hash: `h${n}`, done: Promise.resolve() }));
  const hashes = new Map([
    [3, 'h3'],
    [5, 'h5'],
    [9, 'other'],
  ]);
  assert.equal(longestVerified(pending, hashes, 0)?.wireCount, 5, 'a different history is not waited for');
  assert.equal(longestVerified(pending, hashes, 5), undefined, 'nothing beyond the verified prefix');
  assert.equal(longestVerified(pending, new Map([[5, 'h5']]), 3)?.wireCount, 5);
});

test('a request waits for the bind in progress whose history it extends, hashing that length first', async () => {
  const wire = [{ a: 1 }, { b: 2 }, { c: 3 }, { d: 4 }];
  const own = await wirePrefixHashes(wire, [2], undefined);
  const p = new PendingBinds();
  const extended = p.start('c', 2, own.at.get(2)!);
  const other = p.start('c', 3, 'another history');
  const mine = p.start('c', wire.length, own.full);
  const hashes = new Map<number, string>();
  let waited: boolean | undefined;
  const waiting = awaitExtendedBind(mine.earlier, wire, hashes, 0, undefined, undefined).then(
    (w) => (waited = w),
  );
  await new Promise((r) => setImmediate(r));
  assert.equal(waited, undefined, 'still waiting for the bind it extends');
  assert.equal(hashes.get(2), own.at.get(2), 'the missing length was hashed');
  other.settle();
  await new Promise((r) => setImmediate(r));
  assert.equal(waited, undefined, 'a bind of another history is not waited for');
  extended.settle();
  await waiting;
  assert.equal(waited, true);
  assert.equal(await awaitExtendedBind(mine.earlier, wire, hashes, 2, undefined, undefined), false);
});
