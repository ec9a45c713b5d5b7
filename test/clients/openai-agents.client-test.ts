// The real OpenAI Agents SDK (`@openai/agents`, pinned in test/clients/package.json; it brings its
// own `openai` 7 client) driven against the gateway in front of a scripted model, with a recording
// proxy between them: a Runner with a function tool, streamed and not, over the Responses API (the
// SDK's default) and Chat Completions; see RECORDED.md for what the SDK sends.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Agent,
  OpenAIProvider,
  Runner,
  setTracingDisabled,
  tool,
  user,
  type ModelSettings,
} from '@openai/agents';
import { z } from 'zod';
import {
  checkLoop,
  checkSnapshot,
  lookupResult,
  PNG_DATA_URL,
  prompt,
  REFUSAL,
  SNAPSHOT,
  rigPerTest,
  skipUnlessInstalled,
  SYSTEM,
  type ModelPath,
  type PlanName,
} from './sdk-rig.ts';

const skip = skipUnlessInstalled('@openai/agents', 'the Agents SDK');

// Tracing would export every run to the OpenAI platform.
if (!skip) setTracingDisabled(true);

const rig = rigPerTest();

const lookup = tool({
  name: 'lookup',
  description: 'Look a word up',
  parameters: z.object({ query: z.string() }),
  execute: async ({ query }) => lookupResult(query),
});
const snapshot = tool({
  name: 'snapshot',
  description: 'Take a snapshot of the screen',
  parameters: z.object({}),
  execute: async () => [
    { type: 'text' as const, text: 'the snapshot' },
    { type: 'image' as const, image: `data:image/png;base64,${SNAPSHOT}` },
  ],
});

type Api = 'responses' | 'chat';
const paths: Record<Api, ModelPath> = { responses: '/v1/responses', chat: '/v1/chat/completions' };

/** Runs `plan` with a Runner whose provider points at `baseUrl`; returns the final output. */
async function runAgent(
  baseUrl: string,
  api: Api,
  plan: PlanName,
  stream: boolean,
  modelSettings: ModelSettings = {},
): Promise<unknown> {
  const provider = new OpenAIProvider({
    baseURL: `${baseUrl}/v1`,
    apiKey: 'sk-oda-test',
    useResponses: api === 'responses',
  });
  const runner = new Runner({ modelProvider: provider, tracingDisabled: true });
  const agent = new Agent({
    name: 'Helper',
    instructions: SYSTEM,
    model: 'gpt-5',
    modelSettings,
    tools: [lookup, snapshot],
  });
  const input = [
    user([
      { type: 'input_text', text: prompt(plan) },
      { type: 'input_image', image: PNG_DATA_URL },
    ]),
  ];
  if (!stream) return (await runner.run(agent, input, { maxTurns: 5 })).finalOutput;
  const result = await runner.run(agent, input, { maxTurns: 5, stream: true });
  await result.completed;
  if (result.error) throw result.error;
  return result.finalOutput;
}

describe('the OpenAI Agents SDK through the gateway', { skip, timeout: 60_000 }, () => {
  for (const api of ['responses', 'chat'] as const) {
    for (const stream of [false, true]) {
      test(`Runner with a function tool, ${stream ? 'streamed' : 'not streamed'}, over ${paths[api]}: one chat, all of it logged`, async () => {
        const r = await rig();
        assert.equal(await runAgent(r.url, api, 'loop', stream), 'Loop done.');
        await checkLoop(r, paths[api]);
      });
    }
  }

  test('a function tool answering with an image passes through /v1/responses and is logged as an image', async () => {
    const r = await rig();
    assert.equal(await runAgent(r.url, 'responses', 'snapshot', true), 'Saw it.');
    await checkSnapshot(r, '/v1/responses');
  });

  test('an x-session-id sent as providerData.extraHeaders names the chat', async () => {
    const r = await rig();
    const settings = { providerData: { extraHeaders: { 'x-session-id': 'agents-run-1' } } };
    await runAgent(r.url, 'responses', 'loop', false, settings);
    assert.equal(await checkLoop(r, '/v1/responses'), 'agents-run-1');
  });

  for (const api of ['responses', 'chat'] as const) {
    test(`a provider refusal over ${paths[api]} reaches the caller with its status and message`, async () => {
      const r = await rig({ refuse: true });
      await assert.rejects(runAgent(r.url, api, 'loop', true), (err: Error & { status?: number }) => {
        assert.equal(err.status, 400);
        assert.match(err.message, new RegExp(REFUSAL));
        return true;
      });
    });
  }
});
