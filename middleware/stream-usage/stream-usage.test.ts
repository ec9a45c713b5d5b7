/**
 * The ask for a streamed Chat Completions answer's usage in the pipeline and its repair: asked
 * where the client did not, not of a provider configured `streamUsage: off` or that refused it;
 * taken back when refused, the provider remembered only when the refused field was all the
 * gateway's, and never for want of a repair round.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallContext } from '../call-context.ts';
import { buildRepairs } from '../repairs.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { createResponsesRequestView } from '../../providers/responses/request-view.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { CacheKeyRefusals } from '../prompt-caching/cache-key-refusals.ts';
import { promptCachingStep } from '../prompt-caching/prompt-caching-step.ts';
import { StreamUsageRefusals } from './stream-usage-refusals.ts';
import { streamUsageStep } from './stream-usage-step.ts';

type Obj = Record<string, unknown>;

function context(
  body: Obj,
  refusals: StreamUsageRefusals,
  opts: { provider?: string; create?: (body: Obj) => RequestView; maxRounds?: number } = {},
): CallContext {
  return {
    config: {
      promptCaching: { mode: 'auto' },
      providers: [
        { name: 'a', streamUsage: 'auto', promptCaching: { style: 'breakpoints', cacheKey: true } },
        { name: 'off', streamUsage: 'off', promptCaching: { style: 'breakpoints', cacheKey: true } },
      ],
      repairs: { maxRounds: opts.maxRounds ?? 8 },
    },
    providerName: opts.provider ?? 'a',
    chatId: 'chat-1',
    body,
    view: (opts.create ?? createOpenaiRequestView)(body),
    cacheKeyRefusals: new CacheKeyRefusals(),
    streamUsageRefusals: refusals,
    effects: {},
  } as unknown as CallContext;
}

const streamed = (extra: Obj = {}): Obj => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  stream: true,
  ...extra,
});

test("asked where the client did not; the effect says the usage chunk is the gateway's", () => {
  const ctx = context(streamed(), new StreamUsageRefusals());
  streamUsageStep.run(ctx);
  assert.deepEqual(ctx.body.stream_options, { include_usage: true });
  assert.equal(ctx.effects.streamUsageAdded, true);
  const asked = context(streamed({ stream_options: { include_usage: true } }), new StreamUsageRefusals());
  streamUsageStep.run(asked);
  assert.equal(asked.effects.streamUsageAdded, undefined);
});

test('not asked of a provider configured off, one that refused it, nor in the Responses API', () => {
  const refusals = new StreamUsageRefusals();
  refusals.remember('a');
  const cases = [
    context(streamed(), new StreamUsageRefusals(), { provider: 'off' }),
    context(streamed(), refusals),
    context({ model: 'm', input: 'hi', stream: true }, new StreamUsageRefusals(), {
      create: createResponsesRequestView,
    }),
  ];
  for (const ctx of cases) {
    const before = JSON.stringify(ctx.body);
    streamUsageStep.run(ctx);
    assert.equal(JSON.stringify(ctx.body), before);
    assert.equal(ctx.view.changed, false);
    assert.equal(ctx.effects.streamUsageAdded, undefined);
  }
});

test('refused: taken back, the provider remembered once (a warning), the effect gone', async () => {
  const warned: string[] = [];
  const refusals = new StreamUsageRefusals((p) => warned.push(p));
  for (let i = 0; i < 2; i++) {
    // The second time, the step asks as another gateway would, which has learnt nothing yet.
    const ctx = context(streamed(), refusals.refuses('a') ? new StreamUsageRefusals() : refusals);
    streamUsageStep.run(ctx);
    const shared = { ...ctx, streamUsageRefusals: refusals } as CallContext;
    assert.equal(await buildRepairs(shared).streamOptionsRefused(), true);
    assert.deepEqual(ctx.body, streamed());
    assert.equal(ctx.effects.streamUsageAdded, undefined);
    assert.equal(await buildRepairs(shared).streamOptionsRefused(), false);
  }
  assert.equal(refusals.refuses('a'), true);
  assert.deepEqual(warned, ['a']);
});

test("a refusal of a body with the client's own options teaches nothing about the provider", async () => {
  const refusals = new StreamUsageRefusals();
  const ctx = context(streamed({ stream_options: { include_usage: false } }), refusals);
  streamUsageStep.run(ctx);
  assert.equal(await buildRepairs(ctx).streamOptionsRefused(), true);
  assert.deepEqual(ctx.body.stream_options, { include_usage: false });
  assert.equal(refusals.refuses('a'), false);
});

test('taking the ask back spends no repair round, whatever rounds are left', async () => {
  const ctx = context(streamed(), new StreamUsageRefusals(), { maxRounds: 1 });
  promptCachingStep.run(ctx);
  streamUsageStep.run(ctx);
  const repairs = buildRepairs(ctx);
  // With one round allowed, both asks of the gateway's own are taken back, neither spending it.
  assert.equal(await repairs.cacheKeyRefused(), true);
  assert.equal(await repairs.streamOptionsRefused(), true);
  assert.deepEqual(ctx.body, streamed());
});
