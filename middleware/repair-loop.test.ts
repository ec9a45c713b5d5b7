/**
 * The repair loop with a refused prompt-cache key: the request goes again once the key is taken
 * out, without spending a transport retry; when nothing can be taken out, the provider's refusal is
 * the answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { Refusal } from '../providers/provider.ts';
import type { UpstreamResponse } from '../providers/upstream-client.ts';
import { runRepairLoop, type RepairHooks, type RepairKind } from './repair-loop.ts';

const REFUSAL = '{"error":{"message":"Unknown parameter: \'prompt_cache_key\'.","code":"unknown_parameter"}}';

function response(status: number, text: string): UpstreamResponse {
  return { status, headers: {}, body: Object.assign(Readable.from([]), { text: async () => text }) };
}

/** A loop whose provider answers `statuses` in turn, with the cache-key hook answering `repairs`. */
async function run(statuses: number[], repairs: boolean[]) {
  const sent: number[] = [];
  const sleeps: number[] = [];
  const repaired: RepairKind[] = [];
  const hooks: RepairHooks = {
    imageLimit: async () => assert.fail('no image refusal here'),
    contextOverflow: async () => assert.fail('no overflow here'),
    cacheKeyRefused: async () => repairs.shift() ?? false,
  };
  const result = await runRepairLoop({
    send: async () => {
      const status = statuses[sent.length] ?? 200;
      sent.push(status);
      return response(status, status === 200 ? '{}' : REFUSAL);
    },
    classify: (status): Refusal => (status === 400 ? { kind: 'cache-key-refused' } : { kind: 'other' }),
    repairs: hooks,
    retries: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 4 },
    sleep: async (ms) => void sleeps.push(ms),
    now: () => 0,
    random: () => 0,
    onRepair: (kind) => repaired.push(kind),
  });
  return { result, sent, sleeps, repaired };
}

test('a refused key taken out: one repair round, the request goes again, no retry spent', async () => {
  const { result, sent, sleeps, repaired } = await run([400, 200], [true]);
  assert.equal(result.ok, true);
  assert.equal(result.attempts, 2);
  assert.equal(result.retries, 0);
  assert.deepEqual(sent, [400, 200]);
  assert.deepEqual(sleeps, []);
  assert.deepEqual(repaired, ['cache-key-refused']);
});

test('nothing to take out (the client set the key): the refusal is the answer, as sent', async () => {
  const { result, sent, repaired } = await run([400, 200], [false]);
  assert.ok(!result.ok);
  assert.equal(result.attempts, 1);
  assert.equal(result.bodyText, REFUSAL);
  assert.deepEqual(result.refusal, { kind: 'cache-key-refused' });
  assert.equal(result.gaveUp, undefined);
  assert.deepEqual(sent, [400]);
  assert.deepEqual(repaired, []);
});
