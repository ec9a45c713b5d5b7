import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decisionsModel, trimKey } from './decisions.ts';
import { fold } from './read-model.ts';
import { msg, pruning, setAside, trim } from './test-events.ts';

const run = (...events: Parameters<typeof fold>[2]) => fold(decisionsModel, decisionsModel.initial(), events);

test('trims are keyed by call id and part; a later trim of the same part replaces it', () => {
  const s = run(
    trim(0, 'call_1', 0),
    trim(1, 'call_1', 1),
    trim(2, 'call_2', 0),
    trim(3, 'call_1', 0, 'e'.repeat(64)),
  );
  assert.deepEqual(Object.keys(s.trims).sort(), ['call_1:0', 'call_1:1', 'call_2:0']);
  assert.equal(s.trims[trimKey('call_1', 0)]?.digest, 'e'.repeat(64));
  assert.equal(s.trims[trimKey('call_1', 0)]?.seq, 3);
  assert.deepEqual(s.trims['call_2:0'], {
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

test('a call id that looks like a prototype key is an ordinary key', () => {
  const s = run(trim(0, '__proto__', 0), trim(1, 'constructor', 2));
  assert.deepEqual(Object.keys(s.trims).sort(), ['__proto__:0', 'constructor:2']);
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
