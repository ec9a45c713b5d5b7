// The real LangChain chat models (`@langchain/openai`, `@langchain/anthropic`, `@langchain/core`,
// pinned in test/clients/package.json) driven against the gateway in front of a scripted model, with
// a recording proxy between them: the bindTools loop (invoke, or stream with the chunks concatenated)
// over Chat Completions (ChatOpenAI's default), the Responses API (`useResponsesApi`) and Anthropic
// Messages; see RECORDED.md for what LangChain sends.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { tool } from '@langchain/core/tools';
import {
  HumanMessage,
  SystemMessage,
  type AIMessage,
  type AIMessageChunk,
  type BaseMessage,
} from '@langchain/core/messages';
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

const skip = skipUnlessInstalled('@langchain/openai', 'LangChain');

const rig = rigPerTest();

const lookup = tool(async ({ query }: { query: string }) => lookupResult(query), {
  name: 'lookup',
  description: 'Look a word up',
  schema: z.object({ query: z.string() }),
});
const snapshot = tool(
  async () => [
    { type: 'text', text: 'the snapshot' },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${SNAPSHOT}` } },
  ],
  { name: 'snapshot', description: 'Take a snapshot of the screen', schema: z.object({}) },
);

type Api = 'chat' | 'responses' | 'anthropic';
const paths: Record<Api, ModelPath> = {
  chat: '/v1/chat/completions',
  responses: '/v1/responses',
  anthropic: '/v1/messages',
};

function chatModel(api: Api, baseUrl: string, headers: Record<string, string> = {}) {
  if (api === 'anthropic') {
    return new ChatAnthropic({
      model: 'claude-sonnet-4-5',
      apiKey: 'sk-ant-oda-test',
      anthropicApiUrl: baseUrl,
      clientOptions: { defaultHeaders: headers },
      maxRetries: 0,
    });
  }
  return new ChatOpenAI({
    model: 'gpt-5',
    apiKey: 'sk-oda-test',
    configuration: { baseURL: `${baseUrl}/v1`, defaultHeaders: headers },
    useResponsesApi: api === 'responses',
    maxRetries: 0,
  });
}

/** The bindTools loop: call the model, run the tools it asks for, until it answers with text. */
async function runLoop(llm: ChatOpenAI | ChatAnthropic, plan: PlanName, stream: boolean): Promise<string> {
  const bound = llm.bindTools([lookup, snapshot]);
  const history: BaseMessage[] = [
    new SystemMessage(SYSTEM),
    new HumanMessage({
      content: [
        { type: 'text', text: prompt(plan) },
        { type: 'image_url', image_url: { url: PNG_DATA_URL } },
      ],
    }),
  ];
  for (let step = 0; step < 5; step++) {
    let answer: AIMessage | undefined;
    if (stream) {
      // `.stream()`: with `streaming: true`, `.invoke()` estimates token counts with a tokenizer it
      // downloads, which a machine without internet never gets.
      let whole: AIMessageChunk | undefined;
      for await (const chunk of await bound.stream(history)) whole = whole ? whole.concat(chunk) : chunk;
      answer = whole;
    } else answer = await bound.invoke(history);
    assert.ok(answer, 'the model answered');
    history.push(answer);
    if (!answer.tool_calls?.length) return answer.text;
    for (const call of answer.tool_calls) {
      history.push(call.name === 'snapshot' ? await snapshot.invoke(call) : await lookup.invoke(call));
    }
  }
  assert.fail('the loop did not end');
}

describe('LangChain through the gateway', { skip, timeout: 60_000 }, () => {
  for (const api of ['chat', 'responses', 'anthropic'] as const) {
    for (const stream of [false, true]) {
      test(`bindTools loop, ${stream ? 'streamed' : 'invoked'}, over ${paths[api]}: one chat, all of it logged`, async () => {
        const r = await rig();
        assert.equal(await runLoop(chatModel(api, r.url), 'loop', stream), 'Loop done.');
        await checkLoop(r, paths[api]);
      });
    }
  }

  for (const api of ['chat', 'anthropic'] as const) {
    test(`a tool message holding an image passes through ${paths[api]} and is logged as an image`, async () => {
      const r = await rig();
      assert.equal(await runLoop(chatModel(api, r.url), 'snapshot', false), 'Saw it.');
      await checkSnapshot(r, paths[api]);
    });
  }

  test('an x-session-id default header names the chat', async () => {
    const r = await rig();
    await runLoop(chatModel('anthropic', r.url, { 'x-session-id': 'langchain-run-1' }), 'loop', true);
    assert.equal(await checkLoop(r, '/v1/messages'), 'langchain-run-1');
  });

  for (const api of ['chat', 'responses', 'anthropic'] as const) {
    test(`a provider refusal over ${paths[api]} reaches the caller with its status and message`, async () => {
      const r = await rig({ refuse: true });
      await assert.rejects(
        runLoop(chatModel(api, r.url), 'loop', true),
        (err: Error & { status?: number }) => {
          assert.equal(err.status, 400);
          assert.match(err.message, new RegExp(REFUSAL));
          return true;
        },
      );
    });
  }
});
