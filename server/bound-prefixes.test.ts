import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
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

/** A body's bytes and the ranges of its `messages` elements, as the shape scan gives them. */
function sentBody(messages: readonly unknown[], spacing = ''): { raw: Buffer; ranges: number[] } {
  let text = `{"model":"m",${spacing}"messages":[${spacing}`;
  const ranges: number[] = [];
  messages.forEach((m, i) => {
    if (i > 0) text += `,${spacing}`;
    const part = JSON.stringify(m);
    ranges.push(Buffer.byteLength(text), Buffer.byteLength(text) + Buffer.byteLength(part));
    text += part;
  });
  return { raw: Buffer.from(`${text}]}`), ranges };
}

test('a history that starts with the newest print is compared, and hashes as a pass from scratch would', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.jsonValue(), { minLength: 1, maxLength: 12 }),
      fc.array(fc.jsonValue(), { maxLength: 4 }),
      fc.array(fc.nat(20), { maxLength: 4 }),
      fc.constantFrom('', ' ', '\n  '),
      async (history, added, extraCounts, spacing) => {
        const before = sentBody(history, spacing);
        const first = await wirePrefixHashes(history, [], undefined, before);
        assert.ok(first.print, 'a body with ranges leaves a print');
        const remembered = { wireCount: history.length, hash: first.full, print: first.print };
        const wire = [...history, ...added];
        const now = sentBody(wire, spacing);
        const counts = [history.length, ...extraCounts];
        const fresh = await wirePrefixHashes(wire, counts, undefined, now);
        const resumed = await wirePrefixHashes(wire, counts, undefined, now, remembered);
        assert.equal(resumed.full, fresh.full);
        assert.equal(resumed.at.get(history.length), fresh.at.get(history.length));
        for (const n of counts)
          if (n > history.length && n <= wire.length) assert.equal(resumed.at.get(n), fresh.at.get(n));
        assert.equal(
          resumed.print!.bytes.toString(),
          now.raw.subarray(now.ranges[0], now.ranges.at(-1)).toString(),
        );
        // The next request resumes from this one's print as well.
        const next = sentBody([...wire, 'one more'], spacing);
        const again = await wirePrefixHashes([...wire, 'one more'], [], undefined, next, {
          wireCount: wire.length,
          hash: resumed.full,
          print: resumed.print!,
        });
        const scratch = await wirePrefixHashes([...wire, 'one more'], [wire.length], undefined, next);
        assert.equal(again.full, scratch.full);
        assert.equal(again.at.get(wire.length), scratch.at.get(wire.length));
      },
    ),
    { numRuns: 200 },
  );
});

test('a print is trusted only for bytes equal to its own', async () => {
  const history = [
    { role: 'user', content: 'hello' },
    { role: 'assistant', content: 'hi' },
  ];
  const before = sentBody(history);
  const first = await wirePrefixHashes(history, [], undefined, before);
  // A prefix that says another hash than its bytes': trusting the print gives that hash back,
  // which shows no byte of the prefix was hashed again.
  const trusted = { wireCount: 2, hash: 'as remembered', print: first.print! };
  const wire = [...history, { role: 'user', content: 'next' }];
  const resumed = await wirePrefixHashes(wire, [2], undefined, sentBody(wire), trusted);
  assert.equal(resumed.at.get(2), 'as remembered');
  // One byte changed in the history (same length): hashed from scratch, never the print's hash.
  const edited = [history[0], { role: 'assistant', content: 'ho' }, wire[2]];
  const other = await wirePrefixHashes(edited, [2], undefined, sentBody(edited), trusted);
  const scratch = await wirePrefixHashes(edited, [2], undefined, sentBody(edited));
  assert.equal(other.at.get(2), scratch.at.get(2));
  assert.notEqual(other.at.get(2), first.full);
  // Other spacing between the messages: other bytes, not resumed.
  const spaced = await wirePrefixHashes(wire, [2], undefined, sentBody(wire, ' '), trusted);
  assert.notEqual(spaced.at.get(2), 'as remembered');
  // The JSON road (no ranges) never uses a print.
  const json = await wirePrefixHashes(wire, [2], undefined, undefined, trusted);
  assert.notEqual(json.at.get(2), 'as remembered');
  assert.equal(json.print, undefined);
  // Hashes taken only to wait for a bind in progress make no print.
  const noPrint = await wirePrefixHashes(wire, [2], undefined, sentBody(wire), undefined, false);
  assert.equal(noPrint.print, undefined);
  assert.equal(noPrint.full, (await wirePrefixHashes(wire, [2], undefined, sentBody(wire))).full);
});

test('only the newest prefix of a chat keeps its print, within a byte budget, least recently bound chat first out', async () => {
  const printOfSize = async (size: number) => {
    const wire = ['x'.repeat(size)];
    return (await wirePrefixHashes(wire, [], undefined, sentBody(wire))).print!;
  };
  const p = new BoundPrefixes(100_000);
  const a1 = { ...entry(1, 'a'), print: await printOfSize(40_000) };
  p.remember('a', a1, false);
  assert.equal(p.heldBytes, a1.print.bytes.buffer.byteLength);
  const a2 = { ...entry(2, 'a'), print: await printOfSize(40_000) };
  p.remember('a', a2, false);
  assert.equal(a1.print, undefined, 'the earlier prefix gave its print up');
  assert.ok(p.candidates('a')[0]!.print, 'the newest keeps it');
  p.remember('b', { ...entry(1, 'b'), print: await printOfSize(40_000) }, false);
  p.remember('c', { ...entry(1, 'c'), print: await printOfSize(40_000) }, false);
  assert.ok(p.heldBytes <= 100_000, `held ${p.heldBytes}`);
  assert.equal(p.candidates('a')[0]!.print, undefined, 'the least recently bound chat lost its print');
  assert.equal(p.candidates('a')[0]!.wireCount, 2, 'but kept its prefixes');
  assert.ok(p.candidates('c')[0]!.print);
  // Small bodies' bytes are copied out of the pool slab they may share; a print larger than the
  // whole budget is not kept.
  const small = await printOfSize(100);
  assert.equal(small.bytes.buffer.byteLength, small.bytes.length);
  p.remember('d', { ...entry(1, 'd'), print: await printOfSize(200_000) }, false);
  assert.equal(p.candidates('d')[0]!.print, undefined);
  p.forget('c');
  p.forget('b');
  assert.equal(p.heldBytes, 0);
});
