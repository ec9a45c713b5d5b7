// The real Vercel AI SDK (`ai` with `@ai-sdk/openai` and `@ai-sdk/anthropic`, pinned in
// test/clients/package.json) driven against the gateway in front of a scripted model, with a
// recording proxy between the SDK and the gateway: a multi-step tool loop through generateText and
// streamText over the Responses API (`openai(model)`, the default), Chat Completions
// (`openai.chat(model)`) and Anthropic Messages; see RECORDED.md for what the SDK sends.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, stepCountIs, streamText, tool, type LanguageModel, type ModelMessage } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { z } from 'zod';
import {
  checkLoop,
  checkSnapshot,
  lookupResult,
  PNG,
  prompt,
  REFUSAL,
  SNAPSHOT,
  rigPerTest,
  skipUnlessInstalled,
  SYSTEM,
  type ModelPath,
  type PlanName,
} from './sdk-rig.ts';
import { loggedMessages } from './gateway-log.ts';

const skip = skipUnlessInstalled('ai', 'the AI SDK');

const rig = rigPerTest();

const tools = {
  lookup: tool({
    description: 'Look a word up',
    inputSchema: z.object({ query: z.string() }),
    execute: async ({ query }) => lookupResult(query),
  }),
  snapshot: tool({
    description: 'Take a snapshot of the screen',
    inputSchema: z.object({}),
    execute: async () => SNAPSHOT,
    toModelOutput: ({ output }) => ({
      type: 'content',
      value: [
        { type: 'text', text: 'the snapshot' },
        { type: 'image-data', data: output, mediaType: 'image/png' },
      ],
    }),
  }),
};

type Api = 'responses' | 'chat' | 'anthropic';
const paths: Record<Api, ModelPath> = {
  responses: '/v1/responses',
  chat: '/v1/chat/completions',
  anthropic: '/v1/messages',
};

function model(api: Api, baseUrl: string, headers?: Record<string, string>): LanguageModel {
  if (api === 'anthropic') {
    return createAnthropic({ baseURL: `${baseUrl}/v1`, apiKey: 'sk-ant-oda-test', headers })(
      'claude-sonnet-4-5',
    );
  }
  const openai = createOpenAI({ baseURL: `${baseUrl}/v1`, apiKey: 'sk-oda-test', headers });
  return api === 'chat' ? openai.chat('gpt-5') : openai('gpt-5');
}

const messages = (plan: PlanName): ModelMessage[] => [
  {
    role: 'user',
    content: [
      { type: 'text', text: prompt(plan) },
      { type: 'image', image: PNG, mediaType: 'image/png' },
    ],
  },
];

/** Runs `plan` to its end, streamed or not; returns the final text and the messages to go on with. */
async function runLoop(m: LanguageModel, plan: PlanName, stream: boolean, history = messages(plan)) {
  const opts = {
    model: m,
    system: SYSTEM,
    tools,
    stopWhen: stepCountIs(5),
    messages: history,
    maxRetries: 0,
  };
  if (!stream) {
    const r = await generateText(opts);
    return { text: r.text, messages: [...history, ...r.response.messages] };
  }
  const errors: unknown[] = [];
  const r = streamText({ ...opts, onError: ({ error }) => void errors.push(error) });
  const text = await r.text;
  assert.deepEqual(errors, [], 'the stream reported no error');
  return { text, messages: [...history, ...(await r.response).messages] };
}

describe('the Vercel AI SDK through the gateway', { skip, timeout: 60_000 }, () => {
  for (const api of ['responses', 'chat', 'anthropic'] as const) {
    for (const stream of [false, true]) {
      test(`${stream ? 'streamText' : 'generateText'} over ${paths[api]}: a tool loop lands in one chat, all of it logged`, async () => {
        const r = await rig();
        const { text } = await runLoop(model(api, r.url), 'loop', stream);
        assert.equal(text, 'Loop done.');
        await checkLoop(r, paths[api]);
      });
    }
  }

  test('openai(model): the next turn, sent with item references, goes on in the same chat', async () => {
    const r = await rig();
    const m = model('responses', r.url);
    const first = await runLoop(m, 'loop', false);
    const main = await checkLoop(r, '/v1/responses');
    const next = [...first.messages, { role: 'user' as const, content: 'Once more [[plan:loop]]' }];
    assert.equal((await runLoop(m, 'loop', true, next)).text, 'Loop done.');
    // The SDK refers to the stored reasoning and message items instead of sending them again.
    const sent = r.proxy.requestsTo('/v1/responses').at(-1)!.json!.input as Array<{ type?: string }>;
    assert.ok(sent.some((i) => i.type === 'item_reference'));
    const ids = new Set(r.proxy.requestsTo('/v1/responses').map((c) => c.responseHeaders?.['x-session-id']));
    assert.deepEqual([...ids], [main]);
    const logged = await loggedMessages(r.gw.url, main);
    assert.equal(logged.filter((m) => m.role === 'user').length, 2);
    assert.equal(logged.filter((m) => m.content.some((p) => p.kind === 'tool-result')).length, 4);
  });

  for (const api of ['responses', 'anthropic'] as const) {
    test(`a tool result holding an image passes through ${paths[api]} and is logged as an image`, async () => {
      const r = await rig();
      const { text } = await runLoop(model(api, r.url), 'snapshot', api === 'anthropic');
      assert.equal(text, 'Saw it.');
      await checkSnapshot(r, paths[api]);
    });
  }

  test('an x-session-id header set on the provider names the chat', async () => {
    const r = await rig();
    await runLoop(model('chat', r.url, { 'x-session-id': 'ai-sdk-run-1' }), 'loop', true);
    assert.equal(await checkLoop(r, '/v1/chat/completions'), 'ai-sdk-run-1');
  });

  for (const api of ['responses', 'chat', 'anthropic'] as const) {
    for (const stream of [false, true]) {
      test(`a provider refusal over ${paths[api]} (${stream ? 'streamed' : 'not streamed'}) reaches the caller as an APICallError`, async () => {
        const r = await rig({ refuse: true });
        const m = model(api, r.url);
        const opts = { model: m, tools, messages: messages('loop'), maxRetries: 0 };
        let caught: unknown;
        if (stream) {
          streamText({ ...opts, onError: ({ error }) => void (caught = error) }).consumeStream();
          await new Promise<void>((resolve) => {
            const wait = () => (caught !== undefined ? resolve() : setTimeout(wait, 10));
            wait();
          });
        } else {
          caught = await generateText(opts).then(
            () => undefined,
            (e: unknown) => e,
          );
        }
        const err = caught as { name?: string; message?: string; statusCode?: number };
        assert.equal(err?.name, 'AI_APICallError', String(caught));
        assert.equal(err.message, REFUSAL);
        assert.equal(err.statusCode, 400);
      });
    }
  }
});
