/**
 * An agent's tool loops in one wire format (OpenAI Chat and Anthropic through their SDK drivers,
 * Responses through the `openai` SDK), with readers of what the provider received: for e2e tests
 * that grow one conversation turn by turn and look at its tool results on the way out.
 */
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { TestGateway } from './start-gateway.ts';
import { chatDriver, contentText, type ChatDriver } from './sdk-chat-drivers.ts';
import { responsesFunctionCall } from '../fake-provider/fake-responses.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export type LoopFormat = 'openai' | 'anthropic' | 'responses';
export const LOOP_FORMATS: readonly LoopFormat[] = ['openai', 'anthropic', 'responses'];

/** One conversation a test grows, in one wire format, and what the provider got for each call. */
export interface Conversation {
  user(text: string): void;
  /** A tool call the client adds itself, and its result. */
  toolLoop(callId: string, result: string): void;
  /**
   * The model calls `name` under `callId` (the fake provider hands the id out), and the client
   * adds the call's `result`.
   */
  modelCalls(callId: string, name: string, result: string): Promise<void>;
  call(): Promise<{ pruned: string | null; body: Obj }>;
  /** The same conversation, continued through another gateway (one restarted on the same data). */
  moveTo(gw: TestGateway): Conversation;
  /** The provider body's history (messages or input items). */
  history(body: Obj): unknown[];
}

/** The tool results of a provider body (any of the three formats), in order: call id and text. */
export function toolResults(body: Obj): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const list = Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
  for (const m of list) {
    if (!isObj(m)) continue;
    if (m.role === 'tool') out.push([String(m.tool_call_id), contentText(m.content)]);
    if (m.role === 'user' && Array.isArray(m.content)) {
      for (const b of m.content)
        if (isObj(b) && b.type === 'tool_result') out.push([String(b.tool_use_id), contentText(b.content)]);
    }
    if (m.type === 'function_call_output')
      out.push([String(m.call_id), typeof m.output === 'string' ? m.output : contentText(m.output)]);
  }
  return out;
}

const SYSTEM = 'You are a coding agent.';

function sdkConversation(
  gw: TestGateway,
  format: 'openai' | 'anthropic',
  sessionId: string,
  tools: readonly string[],
  history: readonly unknown[] = [],
): Conversation {
  const driver: ChatDriver = chatDriver(format, gw.url, gw.fake, 'small-model', {
    system: SYSTEM,
    tools: [...tools],
    headers: { 'x-session-id': sessionId },
  });
  driver.messages.push(...structuredClone(history));
  return {
    user: (text) => driver.user(text),
    toolLoop(callId, result) {
      driver.assistantToolCall(callId, tools[0]!, { path: `/src/${callId}.ts` });
      driver.toolResult(callId, result);
    },
    async modelCalls(callId, name, result) {
      gw.fake.script(driver.toolCallReply(callId, name, {}));
      const out = await driver.call();
      assert.equal(out.status, 200);
      assert.deepEqual(out.toolCalls, [{ id: callId, name }]);
      driver.toolResult(callId, result);
    },
    async call() {
      const out = await driver.call();
      assert.equal(out.status, 200);
      return { pruned: out.headers.get('x-oda-pruned'), body: out.providerBody };
    },
    moveTo: (next) => sdkConversation(next, format, sessionId, tools, driver.messages),
    history: (body) => (Array.isArray(body.messages) ? body.messages : []),
  };
}

function responsesConversation(
  gw: TestGateway,
  sessionId: string,
  tools: readonly string[],
  history: readonly OpenAI.Responses.ResponseInputItem[] = [],
): Conversation {
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'sk-test',
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': sessionId },
  });
  const input: OpenAI.Responses.ResponseInputItem[] = structuredClone([...history]);
  const create = async () => {
    const { data, response } = await client.responses
      .create({
        model: 'small-model',
        instructions: SYSTEM,
        store: false,
        tools: tools.map((name) => ({
          type: 'function' as const,
          name,
          parameters: { type: 'object', properties: {} },
          strict: false,
        })),
        input,
      })
      .withResponse();
    for (const item of data.output) input.push(item as OpenAI.Responses.ResponseInputItem);
    return { data, response };
  };
  return {
    user: (text) => input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] }),
    toolLoop(callId, result) {
      input.push({ type: 'function_call', call_id: callId, name: tools[0]!, arguments: '{}' });
      input.push({ type: 'function_call_output', call_id: callId, output: result });
    },
    async modelCalls(callId, name, result) {
      gw.fake.script({ responses: { output: [responsesFunctionCall(name, '{}', callId)] } });
      const { data } = await create();
      assert.deepEqual(
        data.output.map((item) => (item.type === 'function_call' ? [item.call_id, item.name] : item.type)),
        [[callId, name]],
      );
      input.push({ type: 'function_call_output', call_id: callId, output: result });
    },
    async call() {
      const { response } = await create();
      const provider = gw.fake.requestsTo('/v1/responses').at(-1);
      return { pruned: response.headers.get('x-oda-pruned'), body: provider?.json ?? {} };
    },
    moveTo: (next) => responsesConversation(next, sessionId, tools, input),
    history: (body) => (Array.isArray(body.input) ? body.input : []),
  };
}

/** A new conversation in `format` under `x-session-id: sessionId`, offering `tools` (by name). */
export function conversation(
  gw: TestGateway,
  format: LoopFormat,
  sessionId: string,
  tools: readonly string[] = ['read_file'],
): Conversation {
  return format === 'responses'
    ? responsesConversation(gw, sessionId, tools)
    : sdkConversation(gw, format, sessionId, tools);
}
