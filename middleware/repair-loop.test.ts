/**
 * The repair loop with a refused prompt-cache key: the request goes again once the key is taken
 * out, without spending a transport retry; when nothing can be taken out, the provider's refusal is
 * the answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { Refusal } from '../providers/provider.ts';
import { UpstreamError, type UpstreamResponse } from '../providers/upstream-client.ts';
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
    streamOptionsRefused: async () => assert.fail('no stream_options refusal here'),
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

test('a client that leaves during the retry backoff: the wait ends, no second attempt is made or counted', async () => {
  const client = new AbortController();
  const sent: number[] = [];
  const progress = { attempts: 0, retries: 0 };
  const waits: Array<{ ms: number; signal: AbortSignal | undefined }> = [];
  const decided: string[] = [];
  const made: string[] = [];
  const loop = runRepairLoop({
    onRetry: (reason) => decided.push(reason),
    onRetried: (reason) => made.push(reason),
    // As the upstream client does: a send on an aborted signal fails at once.
    send: async () => {
      if (client.signal.aborted) throw new UpstreamError('aborted', 'request aborted');
      sent.push(503);
      return response(503, '{"error":{"message":"overloaded"}}');
    },
    classify: (): Refusal => ({ kind: 'transient' }),
    repairs: {
      imageLimit: async () => false,
      contextOverflow: async () => false,
      cacheKeyRefused: async () => false,
      streamOptionsRefused: async () => false,
    },
    retries: { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8000 },
    // The client leaves while the loop waits to retry.
    sleep: async (ms, signal) => {
      waits.push({ ms, signal });
      client.abort();
    },
    signal: client.signal,
    progress,
    now: () => 0,
    random: () => 0,
  });
  await assert.rejects(loop, (e: unknown) => e instanceof UpstreamError && e.code === 'aborted');
  assert.deepEqual(sent, [503]);
  assert.deepEqual(progress, { attempts: 1, retries: 0 }, 'one attempt made, no retry made');
  assert.deepEqual(decided, ['status:503'], 'the retry was decided (and logged)');
  assert.deepEqual(made, [], 'but never made, so not counted');
  assert.equal(waits.length, 1);
  assert.equal(waits[0]!.signal, client.signal, 'the wait is given the call signal, to end early');
});

test('a retry made after its wait is reported once, with its reason', async () => {
  const answers = [503, 200];
  const made: string[] = [];
  const result = await runRepairLoop({
    send: async () => response(answers.shift()!, '{}'),
    classify: (): Refusal => ({ kind: 'transient' }),
    repairs: {
      imageLimit: async () => false,
      contextOverflow: async () => false,
      cacheKeyRefused: async () => false,
      streamOptionsRefused: async () => false,
    },
    retries: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 10 },
    sleep: async () => undefined,
    onRetried: (reason) => made.push(reason),
    now: () => 0,
    random: () => 0,
  });
  assert.equal(result.ok, true);
  assert.deepEqual(made, ['status:503']);
});
