import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decisionsModel, trimKey } from './decisions.ts';
import { fold } from './read-model.ts';
import { msg, pruning, setAside, trim } from './test-events.ts';

const run = (...events: Parameters<typeof fold>[2]) => fold(decisionsModel, decisionsModel.initial(), events);

test('trims are keyed by call id, part and digest; the same text trimmed again keeps the first', () => {
  const s = run(
    trim(0, 'call_1', 0),
    trim(1, 'call_1', 1),
    trim(2, 'call_2', 0),
    // A chain: the first trim's output trimmed again under tighter limits, a different text.
    trim(3, 'call_1', 0, 'e'.repeat(64)),
    // A duplicate of seq 0 (a replay that missed its text): the first stands.
    trim(4, 'call_1', 0),
  );
  assert.deepEqual(Object.keys(s.trims).sort(), [
    `call_1:0:${'b'.repeat(64)}`,
    `call_1:0:${'e'.repeat(64)}`,
    `call_1:1:${'b'.repeat(64)}`,
    `call_2:0:${'b'.repeat(64)}`,
  ]);
  assert.equal(s.trims[trimKey('call_1', 0, 'e'.repeat(64))]?.seq, 3);
  assert.equal(s.trims[trimKey('call_1', 0, 'b'.repeat(64))]?.seq, 0);
  assert.deepEqual(s.trims[trimKey('call_2', 0, 'b'.repeat(64))], {
    seq: 2,
    requestId: 'r2',
    callId: 'call_2',
    part: 0,
    digest: 'b'.repeat(64),
    originalChars: 20000,
    headChars: 4096,
    tailChars: 1024,
    trigger: 'threshold',
  });
});

test('a trim of a text spread over several parts keeps its parts', () => {
  const parts = [
    { chars: 6000, digest: 'c'.repeat(64) },
    { chars: 6000, digest: 'd'.repeat(64) },
  ];
  const s = run(trim(0, 'call_1', 0, 'b'.repeat(64), parts));
  assert.deepEqual(s.trims[trimKey('call_1', 0, 'b'.repeat(64))]?.parts, parts);
  assert.deepEqual(decisionsModel.schema.parse(s), s);
});

test('a call id that looks like a prototype key is an ordinary key', () => {
  const s = run(trim(0, '__proto__', 0), trim(1, 'constructor', 2));
  assert.deepEqual(Object.keys(s.trims).sort(), [
    `__proto__:0:${'b'.repeat(64)}`,
    `constructor:2:${'b'.repeat(64)}`,
  ]);
  assert.equal(Object.getPrototypeOf(s.trims), Object.prototype);
});

test('images set aside: the first note for an image stands', () => {
  const key = 'c'.repeat(64);
  const s = run(setAside(0, key, 'first'), setAside(1, key, 'second'), setAside(2, 'd'.repeat(64), 'other'));
  assert.equal(s.setAside[key]?.note, 'first');
  assert.equal(Object.keys(s.setAside).length, 2);
});

test('the latest pruning pass gives the projection', () => {
  const s = run(pruning(0, 100, true), msg(1, 'user', 'x'), pruning(2, 300, false));
  assert.deepEqual(s.pruning, { seq: 2, at: 300, requestId: 'r2', projection: [] });
  assert.deepEqual(run(pruning(0, 100, true)).pruning?.projection, [
    { callId: 'c1', action: 'soft', digest: 'a'.repeat(64) },
  ]);
  assert.equal(decisionsModel.internal, true);
});
