import { test } from 'node:test';
import assert from 'node:assert/strict';
import { totalsModel } from './totals.ts';
import { fold } from './read-model.ts';
import { msg, request, response, trim } from './test-events.ts';

test('counts messages, requests, responses and sums usage', () => {
  const s = fold(totalsModel, totalsModel.initial(), [
    msg(0, 'user', 'hi', 100),
    request(1),
    response(2, 200, true, {
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 3,
      cacheWriteTokens: 2,
      cacheWrite1hTokens: 1,
    }),
    msg(3, 'model', 'hello', 400),
    request(4),
    response(5, 500, false),
    response(6, 600, true, { inputTokens: 1 }),
    trim(7, 'c', 0),
  ]);
  assert.deepEqual(s, {
    messageCount: 2,
    requestCount: 2,
    responseCount: 3,
    failedResponseCount: 1,
    inputTokens: 11,
    outputTokens: 5,
    cacheReadTokens: 3,
    cacheWriteTokens: 2,
    cacheWrite1hTokens: 1,
    lastActivityAt: 1007,
  });
});

test('empty chat: zero counts and no activity', () => {
  assert.equal(totalsModel.initial().lastActivityAt, null);
  assert.equal(totalsModel.internal, false);
});
