/**
 * A provider that refuses the gateway's `prompt_cache_key`: the repair takes the key out of the
 * request it refused (only a key the gateway added), remembers the provider (once, per gateway),
 * and the prompt-caching step sends that provider no key from then on; other providers keep theirs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallContext } from '../call-context.ts';
import { buildRepairs } from '../repairs.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { createResponsesRequestView } from '../../providers/responses/request-view.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { CacheKeyRefusals } from './cache-key-refusals.ts';
import { promptCachingStep } from './prompt-caching-step.ts';
import { withdrawCacheKey } from './withdraw-cache-key.ts';
import { imageOrdinals } from '../image-set-aside/index.ts';

type Obj = Record<string, unknown>;

/** The parts of a call context prompt caching and its repair use. */
function context(
  body: Obj,
  refusals: CacheKeyRefusals,
  opts: { provider?: string; create?: (body: Obj) => RequestView; maxRounds?: number } = {},
): CallContext {
  const view = (opts.create ?? createOpenaiRequestView)(body);
  return {
    config: {
      promptCaching: { mode: 'auto' },
      providers: ['a', 'b'].map((name) => ({
        name,
        promptCaching: { style: 'breakpoints', cacheKey: true },
      })),
      repairs: { maxRounds: opts.maxRounds ?? 8 },
    },
    providerName: opts.provider ?? 'a',
    chatId: 'chat-1',
    body,
    view,
    cacheKeyRefusals: refusals,
    effects: {
      trimmed: 0,
      trimmedChars: 0,
      imagesSetAside: 0,
      imageRounds: 0,
      pruned: undefined,
      imageReplay: { imagesRemoved: 0, referencesRemoved: 0 },
    },
  } as unknown as CallContext;
}

const chatBody = (extra: Obj = {}): Obj => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

test('the key the gateway added is taken out, the header drops it, and the provider is remembered once', () => {
  const warned: string[] = [];
  const refusals = new CacheKeyRefusals((p) => warned.push(p));
  for (const create of [createOpenaiRequestView, createResponsesRequestView]) {
    const body = create === createOpenaiRequestView ? chatBody() : { model: 'm', input: 'hi' };
    const sent = structuredClone(body);
    // Another gateway's memory: this test's provider has refused nothing there yet.
    const ctx = context(body, new CacheKeyRefusals(), { create });
    promptCachingStep.run(ctx);
    assert.equal(body.prompt_cache_key, 'chat-1');
    assert.equal(ctx.effects.promptCaching, 'key');
    const shared = { ...ctx, cacheKeyRefusals: refusals } as CallContext;
    assert.equal(withdrawCacheKey(shared), true);
    assert.deepEqual(body, sent);
    assert.equal(shared.effects.promptCaching, undefined);
    assert.equal(refusals.refuses('a'), true);
    // Nothing left to take out: the refusal would go back to the client.
    assert.equal(withdrawCacheKey(shared), false);
  }
  assert.deepEqual(warned, ['a']);
});

test('later requests to that provider get no key; another provider still does', () => {
  const refusals = new CacheKeyRefusals();
  refusals.remember('a');
  const refused = chatBody();
  const toA = context(refused, refusals, { provider: 'a' });
  promptCachingStep.run(toA);
  assert.equal('prompt_cache_key' in refused, false);
  assert.equal(toA.effects.promptCaching, undefined);
  assert.equal(toA.view.changed, false);
  const other = chatBody();
  const toB = context(other, refusals, { provider: 'b' });
  promptCachingStep.run(toB);
  assert.equal(other.prompt_cache_key, 'chat-1');
  assert.equal(toB.effects.promptCaching, 'key');
  // Each gateway has its own memory.
  const fresh = chatBody();
  promptCachingStep.run(context(fresh, new CacheKeyRefusals(), { provider: 'a' }));
  assert.equal(fresh.prompt_cache_key, 'chat-1');
});

test('a key the client set is never taken out, and teaches nothing about the provider', () => {
  const refusals = new CacheKeyRefusals();
  const body = chatBody({ prompt_cache_key: 'mine' });
  const ctx = context(body, refusals);
  promptCachingStep.run(ctx);
  assert.equal(ctx.effects.promptCaching, undefined);
  assert.equal(withdrawCacheKey(ctx), false);
  assert.equal(body.prompt_cache_key, 'mine');
  assert.equal(refusals.refuses('a'), false);
});

test('taking the key out spends no repair round: it is taken out after the last round went to images', async () => {
  const refusals = new CacheKeyRefusals();
  const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
  const body = chatBody({ messages: [{ role: 'user', content: [{ type: 'text', text: 'look' }, image] }] });
  const ctx = context(body, refusals, { maxRounds: 1 });
  const recorded: unknown[] = [];
  Object.assign(ctx, {
    imageOrdinals: imageOrdinals(ctx.view),
    describeImage: () => ({}),
    record: async (events: unknown[]) => void recorded.push(...events),
  });
  promptCachingStep.run(ctx);
  assert.equal(typeof body.prompt_cache_key, 'string');
  const repairs = buildRepairs(ctx);
  // The one round goes to the image the provider refused.
  assert.equal(await repairs.imageLimit({ kind: 'image-limit' }), true);
  assert.equal(recorded.length, 1);
  assert.equal(await repairs.imageLimit({ kind: 'image-limit' }), false);
  // The key the gateway added is still taken out, and only once.
  assert.equal(await repairs.cacheKeyRefused(), true);
  assert.equal('prompt_cache_key' in body, false);
  assert.equal(refusals.refuses('a'), true);
  assert.equal(await repairs.cacheKeyRefused(), false);
});
