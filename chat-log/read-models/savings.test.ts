import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Event } from '../format/current.ts';
import { savingsModel } from './savings.ts';
import { decisionsModel } from './decisions.ts';
import { billedTokens } from './billed-tokens.ts';
import { fold } from './read-model.ts';
import { request } from './test-events.ts';

/** A response event with a status, usage and what the mechanisms logged. */
function answer(
  seq: number,
  status: number,
  usage?: Record<string, number>,
  mechanisms?: Record<string, unknown>,
): Event {
  return {
    seq,
    at: 1000 + seq,
    type: 'response',
    requestId: `r${seq}`,
    startedAt: 1000 + seq,
    status,
    ok: status >= 200 && status < 300,
    attempts: 1,
    latencyMs: 5,
    ...(usage ? { usage } : {}),
    ...(mechanisms ? { mechanisms } : {}),
  } as Event;
}

const withFormat = (seq: number, format: 'openai' | 'anthropic'): Event =>
  ({ ...request(seq), format }) as Event;

test('billed tokens by kind: Anthropic input is the base input, OpenAI input includes the cached tokens', () => {
  const usage = { inputTokens: 1000, cacheReadTokens: 800, cacheWriteTokens: 50, outputTokens: 20 };
  assert.deepEqual(billedTokens('anthropic', usage), {
    input: 1000,
    cacheWrite: 50,
    cacheWrite1h: 0,
    cacheRead: 800,
    output: 20,
  });
  assert.deepEqual(billedTokens('openai', usage), {
    input: 200,
    cacheWrite: 50,
    cacheWrite1h: 0,
    cacheRead: 800,
    output: 20,
  });
  assert.deepEqual(billedTokens('responses', { inputTokens: 10, cacheReadTokens: 40 }), {
    input: 0,
    cacheWrite: 0,
    cacheWrite1h: 0,
    cacheRead: 40,
    output: 0,
  });
  // The one-hour writes are a part of the writes (never more than all of them).
  assert.deepEqual(billedTokens('anthropic', { ...usage, cacheWrite1hTokens: 30 }).cacheWrite1h, 30);
  assert.deepEqual(billedTokens('anthropic', { ...usage, cacheWrite1hTokens: 90 }).cacheWrite1h, 50);
});

test('the chat account sums usage per kind and the removals of answered requests', () => {
  const s = fold(savingsModel, savingsModel.initial(), [
    withFormat(0, 'anthropic'),
    answer(
      1,
      200,
      { inputTokens: 100, cacheWriteTokens: 4000, cacheWrite1hTokens: 2500, outputTokens: 30 },
      {
        removed: { imageReplay: 7946 },
        imageReplayFrom: 0,
      },
    ),
    withFormat(2, 'anthropic'),
    answer(
      3,
      200,
      { inputTokens: 20, cacheReadTokens: 4000, outputTokens: 10 },
      {
        removed: { trimming: 1000, pruning: 3, imageSetAside: 7000, imageReplay: 7946 },
      },
    ),
    withFormat(4, 'anthropic'),
    // A refusal: its removals never reached a model (and a refusal reports no usage).
    answer(5, 400, undefined, { removed: { trimming: 999 } }),
    withFormat(6, 'openai'),
    answer(7, 200, { inputTokens: 500, cacheReadTokens: 400, outputTokens: 5 }),
  ]);
  assert.deepEqual(s.tokens, {
    input: 100 + 20 + 100,
    cacheWrite: 4000,
    cacheWrite1h: 2500,
    cacheRead: 4400,
    output: 45,
  });
  assert.deepEqual(s.removed, { trimming: 1000, pruning: 3, imageSetAside: 7000, imageReplay: 15892 });
  assert.equal(s.answered, 3);
  assert.deepEqual(savingsModel.view!(s), {
    answered: 3,
    usage: {
      inputTokens: 220,
      cacheWriteTokens: 4000,
      cacheWrite1hTokens: 2500,
      cacheReadTokens: 4400,
      outputTokens: 45,
    },
    removed: {
      trimming: { chars: 1000, tokens: 250 },
      pruning: { chars: 3, tokens: 1 },
      imageSetAside: { chars: 7000, tokens: 1750 },
      imageReplay: { chars: 15892, tokens: 3973 },
      total: { chars: 23895, tokens: 5974 },
    },
  });
});

test('the image replay window of the latest logged request is a decision', () => {
  const run = (...events: Event[]) => fold(decisionsModel, decisionsModel.initial(), events);
  assert.equal(run(answer(0, 200)).imageReplay, null);
  const s = run(
    answer(0, 200, undefined, { imageReplayFrom: 2 }),
    answer(1, 500, undefined, { imageReplayFrom: 4 }),
    answer(2, 200, undefined, { removed: { pruning: 5 } }),
  );
  // A failed request used its window too; a response without one leaves the last one standing.
  assert.deepEqual(s.imageReplay, { seq: 1, from: 4 });
});
