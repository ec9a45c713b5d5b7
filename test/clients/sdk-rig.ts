/**
 * The rig of the SDK client tests (the Vercel AI SDK, LangChain, the OpenAI Agents SDK): a gateway
 * in front of a scripted model that speaks all three wire formats, a recording proxy between the
 * SDK and the gateway, and the checks every tool loop must pass (one chat, every message logged).
 * The plans are written once and answered in the format each request speaks: Responses (with a
 * reasoning item first, as reasoning models answer), Chat Completions, Anthropic Messages.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, afterEach } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import type { FakeHandler, FakeReply, RecordedRequest } from '../fake-provider/fake-provider.ts';
import { startRecordingProxy, type RecordingProxy } from './recording-proxy.ts';
import { claudeCodeModel, scriptMany, type Block } from './anthropic-agent.ts';
import { codexModel, type ResponsesStepItem } from './responses-agent.ts';
import { chatCompletionsModel, type ChatStepItem } from './chat-completions-agent.ts';
import { chatsOf, loggedMessages, loggedText } from './gateway-log.ts';
import { solidPng } from './png.ts';

/** One model turn: an optional text, then the tool calls (none: the loop ends). */
export interface SdkStep {
  text?: string;
  calls?: Array<{ name: string; args: Record<string, unknown> }>;
}

/** The tool loop every client runs: two lookups, one per step, then a final answer. */
export const LOOP_PLAN: SdkStep[] = [
  { text: 'Looking alpha up.', calls: [{ name: 'lookup', args: { query: 'alpha' } }] },
  { calls: [{ name: 'lookup', args: { query: 'beta' } }] },
  { text: 'Loop done.' },
];

/** A tool that answers with an image, then a final answer. */
export const SNAPSHOT_PLAN: SdkStep[] = [{ calls: [{ name: 'snapshot', args: {} }] }, { text: 'Saw it.' }];

export const PLANS = { loop: LOOP_PLAN, snapshot: SNAPSHOT_PLAN };
export type PlanName = keyof typeof PLANS;

/** The typed prompt that runs plan `name`. */
export const prompt = (name: PlanName): string => `Run the plan [[plan:${name}]]`;
export const SYSTEM = 'You are terse.';
/** What the `lookup` tool answers. */
export const lookupResult = (query: string): string => `result for ${query}`;
/** The image the prompt carries. */
export const PNG = solidPng(8, [200, 30, 30]);
export const PNG_DATA_URL = `data:image/png;base64,${PNG.toString('base64')}`;
/** The image the `snapshot` tool answers with. */
export const SNAPSHOT = solidPng(8, [30, 200, 30]).toString('base64');
/** The message a refusing provider gives, which the client must surface. */
export const REFUSAL = 'oda-test: refused by the provider';

function plansFor<T>(convert: (step: SdkStep, first: boolean) => T[]): Record<string, T[][]> {
  return Object.fromEntries(
    Object.entries(PLANS).map(([name, steps]) => [name, steps.map((s, i) => convert(s, i === 0))]),
  );
}

const responsesHandler = codexModel({
  plans: plansFor<ResponsesStepItem>((s, first) => [
    ...(first ? [{ type: 'reasoning' as const, summary: 'Plan the lookups.' }] : []),
    ...(s.text !== undefined ? [{ type: 'message' as const, text: s.text }] : []),
    ...(s.calls ?? []).map((c) => ({ type: 'function_call' as const, name: c.name, arguments: c.args })),
  ]),
});
const chatHandler = chatCompletionsModel({
  plans: plansFor<ChatStepItem>((s) => [
    ...(s.text !== undefined ? [{ type: 'text' as const, text: s.text }] : []),
    ...(s.calls ?? []).map((c) => ({ type: 'tool_call' as const, name: c.name, arguments: c.args })),
  ]),
});
const messagesHandler = claudeCodeModel({
  plans: plansFor<Block>((s) => [
    ...(s.text !== undefined ? [{ type: 'text' as const, text: s.text }] : []),
    ...(s.calls ?? []).map((c) => ({ type: 'tool_use' as const, name: c.name, input: c.args })),
  ]),
});

/** The scripted model of every format. */
const sdkModel: FakeHandler = (req) => responsesHandler(req) ?? chatHandler(req) ?? messagesHandler(req);

/** A provider refusal in the format of the request's path. */
function refusal(req: RecordedRequest): FakeReply {
  return req.path.startsWith('/v1/messages')
    ? { status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message: REFUSAL } } }
    : {
        status: 400,
        json: { error: { message: REFUSAL, type: 'invalid_request_error', param: null, code: null } },
      };
}

export interface SdkRig {
  gw: TestGateway;
  proxy: RecordingProxy;
  /** The proxy's URL: the gateway as the SDK sees it. */
  url: string;
  close(): Promise<void>;
}

/** A gateway with the scripted model (or, `refuse`, a provider refusing every call) and a proxy. */
export async function startSdkRig(opts: { refuse?: boolean } = {}): Promise<SdkRig> {
  const gw = await startGateway();
  scriptMany(gw.fake, opts.refuse ? refusal : sdkModel, 100);
  const proxy = await startRecordingProxy(gw.url);
  return {
    gw,
    proxy,
    url: proxy.url,
    async close() {
      await proxy.close();
      await gw.close();
    },
  };
}

/** The provider paths of the three formats. */
export type ModelPath = '/v1/responses' | '/v1/chat/completions' | '/v1/messages';

/**
 * Asserts that the calls of one conversation through `path` all landed in one chat of the gateway,
 * with no branch, and returns that chat's id and its logged messages.
 */
export async function oneChat(rig: SdkRig, path: ModelPath, calls: number) {
  const proxied = rig.proxy.requestsTo(path);
  assert.equal(proxied.length, calls, `${calls} model calls through ${path}`);
  assert.ok(
    proxied.every((r) => r.status === 200),
    `every call answered 200: ${proxied.map((r) => r.status).join(',')}`,
  );
  const ids = new Set(proxied.map((r) => r.responseHeaders?.['x-session-id']));
  assert.equal(ids.size, 1, `one chat for the whole conversation: ${[...ids].join(', ')}`);
  const main = String([...ids][0]);
  assert.deepEqual(await chatsOf(rig.gw.url, main), [main], 'no branch chat');
  return { main, messages: await loggedMessages(rig.gw.url, main) };
}

/**
 * Checks a finished `loop` plan: one chat holding the prompt (with its image), both tool calls and
 * their results, and the final answer; the provider's last call carried both results.
 */
export async function checkLoop(rig: SdkRig, path: ModelPath): Promise<string> {
  const { main, messages } = await oneChat(rig, path, 3);
  const user = messages.find((m) => m.role === 'user');
  assert.ok(user, 'the prompt is logged');
  assert.match(loggedText(user), /\[\[plan:loop\]\]/);
  assert.ok(
    user.content.some((p) => p.kind === 'image'),
    'the prompt image is logged',
  );
  const calls = messages.flatMap((m) => m.content.filter((p) => p.kind === 'tool-call'));
  assert.deepEqual(
    calls.map((c) => (c.kind === 'tool-call' ? c.name : '')),
    ['lookup', 'lookup'],
  );
  const results = messages.filter((m) => m.content.some((p) => p.kind === 'tool-result')).map(loggedText);
  assert.deepEqual(results, [lookupResult('alpha'), lookupResult('beta')]);
  assert.equal(loggedText(messages.at(-1)!), 'Loop done.');
  assert.equal(messages.at(-1)!.role, 'model');
  const last = rig.gw.fake.requestsTo(path).at(-1)!;
  assert.match(last.raw.toString('utf8'), /result for alpha[\s\S]*result for beta/);
  return main;
}

/** Checks a finished `snapshot` plan: the tool's image reached the provider and the log. */
export async function checkSnapshot(rig: SdkRig, path: ModelPath): Promise<void> {
  const { messages } = await oneChat(rig, path, 2);
  const result = messages.find((m) => m.content.some((p) => p.kind === 'tool-result'));
  assert.ok(result, 'the tool result is logged');
  const part = result.content.find((p) => p.kind === 'tool-result');
  assert.ok(
    part?.kind === 'tool-result' && part.content.some((c) => c.kind === 'image'),
    `the tool result's image is logged: ${JSON.stringify(part)}`,
  );
  const sent = rig.gw.fake.requestsTo(path).at(-1)!.raw.toString('utf8');
  assert.ok(sent.includes(SNAPSHOT), "the provider received the tool's image");
}

/** A client test file's `skip`: false when `pkg` is installed beside the client tests, else why not. */
export function skipUnlessInstalled(pkg: string, what: string): false | string {
  const manifest = fileURLToPath(new URL(`./node_modules/${pkg}/package.json`, import.meta.url));
  return existsSync(manifest) ? false : `${what} is not installed (npm run test:clients installs it)`;
}

/** Starts rigs for a test file's tests, each closed after its test (and all after the file). */
export function rigPerTest(): (opts?: { refuse?: boolean }) => Promise<SdkRig> {
  const open: SdkRig[] = [];
  const closeAll = async () => {
    while (open.length) await open.pop()!.close();
  };
  afterEach(closeAll);
  after(closeAll);
  return async (opts = {}) => {
    const r = await startSdkRig(opts);
    open.push(r);
    return r;
  };
}
