import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cacheClockModel } from './cache-clock.ts';
import { fold } from './read-model.ts';
import { msg, pruning, response } from './test-events.ts';

const run = (...events: Parameters<typeof fold>[2]) =>
  fold(cacheClockModel, cacheClockModel.initial(), events);

test('no clock before a successful call', () => {
  assert.deepEqual(run(msg(0, 'user', 'hi'), response(1, 5000, false)), {
    lastCacheTouchAt: null,
    lastPruning: null,
  });
});

test('a successful call moves the clock to the request start, never backwards', () => {
  assert.equal(run(response(0, 5000, true)).lastCacheTouchAt, 5000);
  assert.equal(run(response(0, 5000, true), response(1, 9000, true)).lastCacheTouchAt, 9000);
  assert.equal(run(response(0, 9000, true), response(1, 5000, true)).lastCacheTouchAt, 9000);
  assert.equal(run(response(0, 5000, true), response(1, 9000, false)).lastCacheTouchAt, 5000);
});

test('a pruning pass moves the clock only when it changed what the model receives', () => {
  const unchanged = run(response(0, 5000, true), pruning(1, 8000, false));
  assert.equal(unchanged.lastCacheTouchAt, 5000);
  assert.deepEqual(unchanged.lastPruning, {
    at: 8000,
    soft: 0,
    cleared: 0,
    charsRemoved: 0,
    estimateBefore: 90000,
    estimateAfter: 90000,
    changed: false,
  });
  const changed = run(response(0, 5000, true), pruning(1, 8000, true));
  assert.equal(changed.lastCacheTouchAt, 8000);
  assert.equal(changed.lastPruning?.charsRemoved, 5000);
});

test('public: the snapshot shows it', () => {
  assert.equal(cacheClockModel.internal, false);
});

test('a 2xx answer that was cut short still touched the provider cache', () => {
  const cut = { ...response(0, 5000, false), status: 200 };
  assert.equal(run(cut).lastCacheTouchAt, 5000);
});
