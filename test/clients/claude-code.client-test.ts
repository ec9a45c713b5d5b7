// The real Claude Code CLI (npm @anthropic-ai/claude-code, pinned in test/clients/package.json)
// driven headless through the gateway against a scripted fake Anthropic provider, with a recording
// proxy between the CLI and the gateway. Each test asserts on what the CLI printed, on what the
// provider received, and on the chats the gateway logged (SPEC sections 2 and 10). Run by
// `npm run test:clients`, which installs the CLI first.
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { bodies } from '../fake-provider/fake-bodies.ts';
import type { RecordedRequest } from '../fake-provider/fake-provider.ts';
import { startRecordingProxy, type ProxiedRequest, type RecordingProxy } from './recording-proxy.ts';
import {
  bash,
  claudeCodeModel,
  messagesOf,
  planMarker,
  say,
  scriptMany,
  SIDE_TITLE,
  textOf,
  toolResultsOf,
  type AgentScript,
} from './anthropic-agent.ts';
import {
  claudeBin,
  claudeEnv,
  clisInstalled,
  describeRun,
  makeSandbox,
  runCli,
  startLiveCli,
  writeClaudeConfig,
  type CliResult,
  type CliSandbox,
} from './cli-run.ts';
import { chatsOf, loggedEvents, loggedMessages, loggedText, sessionInfo, treeNodes } from './gateway-log.ts';
import { solidPng } from './png.ts';

const CLI_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 240_000;
const MODEL = 'claude-sonnet-4-5';

const skip = clisInstalled ? false : 'the real CLIs are not installed (npm run test:clients installs them)';

interface Rig {
  gw: TestGateway;
  proxy: RecordingProxy;
  sb: CliSandbox;
  /** Runs `claude` headless with `args`, JSON output, permissions skipped. */
  claude(args: string[]): Promise<{ run: CliResult; out: ClaudeJsonResult }>;
  close(): Promise<void>;
}

interface ClaudeJsonResult {
  type: string;
  subtype?: string;
  is_error: boolean;
  result?: string;
  session_id: string;
  num_turns?: number;
}

const open: Rig[] = [];

/** A gateway in front of a fake provider answering as `script` says, a proxy, and a sandbox. */
async function rig(
  script: AgentScript,
  before: Parameters<TestGateway['fake']['script']> = [],
  opts: { settings?: Record<string, unknown>; config?: Parameters<typeof startGateway>[0] } = {},
): Promise<Rig> {
  const gw = await startGateway(opts.config);
  gw.fake.script(...before);
  scriptMany(gw.fake, claudeCodeModel(script), 400);
  const proxy = await startRecordingProxy(gw.url);
  const sb = makeSandbox('claude');
  writeClaudeConfig(sb, opts.settings);
  const r: Rig = {
    gw,
    proxy,
    sb,
    async claude(args) {
      const run = await runCli(
        claudeBin,
        [...args, '--output-format', 'json', '--dangerously-skip-permissions', '--model', MODEL],
        { cwd: sb.cwd, env: claudeEnv(sb, proxy.url), timeoutMs: CLI_TIMEOUT_MS },
      );
      assert.equal(run.code, 0, `claude ${args.join(' ')}: ${describeRun(run)}`);
      let out: ClaudeJsonResult;
      try {
        out = JSON.parse(run.stdout.trim().split('\n').at(-1) ?? '') as ClaudeJsonResult;
      } catch {
        assert.fail(`claude printed no JSON result: ${describeRun(run)}`);
      }
      assert.equal(out.is_error, false, `claude reported an error: ${describeRun(run)}`);
      return { run, out };
    },
    async close() {
      await proxy.close();
      await gw.close();
      sb.cleanup();
    },
  };
  open.push(r);
  return r;
}

afterEach(async () => {
  while (open.length) await open.pop()!.close();
});
after(async () => {
  while (open.length) await open.pop()!.close();
});

const mainChat = (sessionId: string) => `claude-code:${sessionId}`;
const modelCalls = (p: RecordingProxy) => p.requestsTo('/v1/messages');
const sessionHeader = (r: ProxiedRequest) => String(r.responseHeaders?.['x-session-id']);
const stripCache = (v: unknown): unknown =>
  JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'cache_control' ? undefined : x)));
const re = (s: string) => s.replace(/[.*+?^${}()|[\]\\:-]/g, '\\$&');

/** The typed prompt of a provider request's latest user text. */
function lastUserText(req: RecordedRequest): string {
  const m = messagesOf(req).filter((x) => x.role === 'user');
  return m.length ? textOf(m[m.length - 1]!) : '';
}

describe('Claude Code through the gateway', { skip, timeout: TEST_TIMEOUT_MS * 6 }, () => {
  test(
    'a Bash, Read (an image), Bash, answer loop completes and lands in the session chat',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const png = solidPng(16, [200, 40, 40]);
      const r = await rig({
        plans: {
          loop: [
            bash('echo step-one', 'First step'),
            (req) => [{ type: 'tool_use', name: 'Read', input: { file_path: join(cwdOf(req), 'pic.png') } }],
            bash('echo step-two', 'Second step'),
            say('All steps done.'),
          ],
        },
      });
      writeFileSync(join(r.sb.cwd, 'pic.png'), png);
      const { out } = await r.claude(['-p', `Run the plan ${planMarker('loop')}`]);
      assert.equal(out.result, 'All steps done.');
      assert.equal(out.num_turns, 4);

      // What the provider received: four streamed calls, the last one carrying every tool result.
      const calls = r.gw.fake.requestsTo('/v1/messages');
      assert.equal(calls.length, 4);
      assert.ok(calls.every((c) => c.json?.stream === true));
      const results = messagesOf(calls[3]!).flatMap(toolResultsOf);
      assert.equal(results.length, 3);
      assert.match(JSON.stringify(results[0]!.content), /step-one/);
      const image = (results[1]!.content as Array<{ type: string; source?: { data?: string } }>).find(
        (b) => b.type === 'image',
      );
      assert.equal(image?.source?.data, png.toString('base64'), 'the image reached the provider as read');
      assert.match(JSON.stringify(results[2]!.content), /step-two/);

      // What the gateway logged: one chat, the session's, holding the whole loop in order.
      const main = mainChat(out.session_id);
      assert.deepEqual(
        modelCalls(r.proxy).map(sessionHeader),
        calls.map(() => main),
      );
      assert.deepEqual(await chatsOf(r.gw.url, main), [main]);
      const messages = await loggedMessages(r.gw.url, main);
      const texts = messages.map(loggedText);
      const order = [
        '[[plan:loop]]',
        'Bash({"command":"echo step-one"',
        'step-one',
        'Read(',
        'Bash({"command":"echo step-two"',
        'step-two',
        'All steps done.',
      ];
      let at = 0;
      for (const t of texts) if (at < order.length && t.includes(order[at]!)) at++;
      assert.equal(at, order.length, `the log holds the loop in order; got:\n${texts.join('\n---\n')}`);
      const logged = messages
        .flatMap((m) => m.content)
        .flatMap((p) => (p.kind === 'tool-result' ? p.content : []));
      const img = logged.find((p) => p.kind === 'image');
      assert.equal(img?.kind === 'image' ? img.attachment?.mediaType : undefined, 'image/png');
      assert.equal(img?.kind === 'image' ? img.attachment?.width : undefined, 16);
      // Every message the model received is in the log, the <system-reminder> context included.
      assert.match(texts[0]!, /<system-reminder>\n# Environment/);
      assert.equal(texts.filter((t) => t === 'All steps done.').length, 1);
    },
  );

  test(
    "a sub-agent's conversation is a child chat named after its agent id",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({
        plans: {
          delegate: [
            [
              {
                type: 'tool_use',
                name: 'Agent',
                input: {
                  description: 'Run the sub task',
                  prompt: `Do the sub task ${planMarker('subtask')}`,
                  subagent_type: 'general-purpose',
                  run_in_background: false,
                },
              },
            ],
            say('The sub-agent finished.'),
          ],
          subtask: [bash('echo sub-step', 'Sub step'), say('Sub task done.')],
        },
      });
      const { out } = await r.claude(['-p', `Delegate ${planMarker('delegate')}`]);
      assert.equal(out.result, 'The sub-agent finished.');
      const main = mainChat(out.session_id);

      const agentCalls = modelCalls(r.proxy).filter((c) => c.headers['x-claude-code-agent-id'] !== undefined);
      assert.equal(agentCalls.length, 2, 'the sub-agent made its own two calls');
      const agentId = String(agentCalls[0]!.headers['x-claude-code-agent-id']);
      assert.ok(agentCalls.every((c) => c.headers['x-claude-code-session-id'] === out.session_id));
      assert.match(
        lastUserText(r.gw.fake.requestsTo('/v1/messages').find((c) => c.headers['x-claude-code-agent-id'])!),
        /Do the sub task/,
      );

      // SPEC 10: a child chat whose id contains the agent id and whose header names the main chat.
      const child = `${main}.agent-${agentId}`;
      for (const c of modelCalls(r.proxy)) {
        assert.equal(sessionHeader(c), c.headers['x-claude-code-agent-id'] ? child : main);
      }
      assert.deepEqual(await chatsOf(r.gw.url, main), [main, child].sort());
      const info = await sessionInfo(r.gw.url, child);
      assert.equal(info.header.parent, main);
      assert.deepEqual(info.header.conversation, { kind: 'subagent', session: main, agentId });
      const childTexts = (await loggedMessages(r.gw.url, child)).map(loggedText);
      assert.ok(childTexts.some((t) => t.includes('Do the sub task')));
      assert.ok(childTexts.some((t) => t.includes('sub-step')));
      assert.equal(childTexts.at(-1), 'Sub task done.');
      const mainTexts = (await loggedMessages(r.gw.url, main)).map(loggedText);
      assert.ok(mainTexts.some((t) => t.includes('Sub task done.') && t.includes('[Subagent hand-back]')));
      assert.ok(
        !mainTexts.some((t) => t.includes('echo sub-step')),
        "the sub-agent's calls are not in the main chat",
      );
      const tree = (await sessionInfo(r.gw.url, main)).conversations;
      assert.ok(tree, 'GET /v1/sessions/{id} shows the conversation tree');
      assert.equal(tree.id, main);
      assert.ok(
        treeNodes(tree).some((n) => n.id === child && n.kind === 'subagent' && n.agentId === agentId),
      );
    },
  );

  test(
    '--continue goes on in the same chat, the history sent again byte for byte',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({
        plans: {
          one: [bash('echo first-run', 'First run'), say('First run done.')],
          two: [bash('echo second-run', 'Second run'), say('Second run done.')],
        },
      });
      const first = await r.claude(['-p', `Start ${planMarker('one')}`]);
      const callsOfFirst = r.gw.fake.requestsTo('/v1/messages').length;
      const second = await r.claude(['-p', `Go on ${planMarker('two')}`, '--continue']);
      assert.equal(second.out.result, 'Second run done.');
      assert.equal(second.out.session_id, first.out.session_id, '--continue keeps the session id');

      const calls = r.gw.fake.requestsTo('/v1/messages');
      const lastOfFirst = messagesOf(calls[callsOfFirst - 1]!);
      const firstOfSecond = messagesOf(calls[callsOfFirst]!);
      assert.deepEqual(
        stripCache(firstOfSecond.slice(0, lastOfFirst.length)),
        stripCache(lastOfFirst),
        'the continued history starts with the earlier one',
      );
      assert.equal(firstOfSecond[lastOfFirst.length]?.role, 'assistant');

      const main = mainChat(first.out.session_id);
      assert.ok(modelCalls(r.proxy).every((c) => sessionHeader(c) === main));
      assert.deepEqual(await chatsOf(r.gw.url, main), [main], 'no branch for a continued session');
      const texts = (await loggedMessages(r.gw.url, main)).map(loggedText);
      assert.equal(texts.filter((t) => t === 'First run done.').length, 1, 'the earlier turn is logged once');
      const a = texts.findIndex((t) => t.includes('[[plan:one]]'));
      const b = texts.findIndex((t) => t.includes('[[plan:two]]'));
      assert.ok(a >= 0 && b > a, 'both prompts, in order');
      assert.equal(texts.at(-1), 'Second run done.');
    },
  );

  test(
    '/compact continues the chat: the compaction is recorded and the history is not copied',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({
        plans: {
          one: [bash('echo before-compact', 'Before'), say('Done before compacting.')],
          two: [bash('echo after-compact', 'After'), say('Done after compacting.')],
        },
      });
      const first = await r.claude(['-p', `Start ${planMarker('one')}`]);
      const before = r.gw.fake.requestsTo('/v1/messages').length;
      await r.claude(['-p', '/compact', '--continue']);
      const compactCalls = r.gw.fake.requestsTo('/v1/messages').slice(before);
      assert.equal(compactCalls.length, 1, 'one summary request (the answer had its <summary> block)');
      assert.match(lastUserText(compactCalls[0]!), /create a detailed summary of the conversation/);
      const third = await r.claude(['-p', `Then ${planMarker('two')}`, '--continue']);
      assert.equal(third.out.result, 'Done after compacting.');
      assert.equal(third.out.session_id, first.out.session_id);

      // Claude Code starts the next turn from the summary, as a plain string user message.
      const afterCalls = r.gw.fake.requestsTo('/v1/messages').slice(before + 1);
      const firstMessage = messagesOf(afterCalls[0]!)[0]!;
      assert.equal(typeof firstMessage.content, 'string');
      assert.match(
        String(firstMessage.content),
        /^This session is being continued from a previous conversation/,
      );
      assert.match(String(firstMessage.content), /Pending Tasks: nothing is pending/);

      const main = mainChat(first.out.session_id);
      // The summary request is a side request of the session (SPEC section 10): its own side chat
      // holds the instruction and the summary; every other request is logged in the session chat.
      const chats = modelCalls(r.proxy).map(sessionHeader);
      const summaryChats = chats.filter((c) => c !== main);
      assert.equal(summaryChats.length, 1, `one request outside the session chat: ${chats.join(', ')}`);
      assert.match(summaryChats[0]!, /\.side-summary-[0-9a-f]{12}$/);
      assert.deepEqual(
        await chatsOf(r.gw.url, main),
        [main, summaryChats[0]!].sort(),
        'no branch and no copy for a compaction',
      );
      const sideMessages = (await loggedEvents(r.gw.url, summaryChats[0]!)).filter(
        (e) => e.type === 'message',
      );
      assert.equal(sideMessages.length, 2, 'the side chat holds the instruction and the summary only');
      const events = await loggedEvents(r.gw.url, main);
      const compactions = events.filter((e) => e.type === 'compaction');
      assert.equal(compactions.length, 1, 'the compaction is recorded');
      const compaction = compactions[0]!;
      const messages = events.filter((e) => e.type === 'message');
      const replaced = messages.filter(
        (m) => m.seq >= compaction.replaced.fromSeq && m.seq <= compaction.replaced.toSeq,
      );
      assert.ok(
        replaced.some((m) => loggedText(m).includes('[[plan:one]]')),
        'the summary replaced the first turn',
      );
      const afterIt = messages.filter((m) => m.seq > compaction.seq).map(loggedText);
      assert.match(afterIt[0]!, /^This session is being continued/);
      assert.equal(afterIt.at(-1), 'Done after compacting.');
      // The summarised history is not copied: the first turn's prompt stands once in the log. The
      // newest answer does stand twice: Claude Code keeps it verbatim after the summary, so the
      // model received it again.
      assert.equal(
        messages.map(loggedText).filter((t) => t.includes('[[plan:one]]')).length,
        1,
        'the earlier history is stored once',
      );
      assert.equal(messages.map(loggedText).filter((t) => t === 'Done before compacting.').length, 2);
    },
  );

  test(
    '/compact after a plain answer: the summary request goes to a side chat, the next turn continues the chat',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({
        plans: { one: [say('Plain answer before compacting.')], two: [say('Done after compacting.')] },
      });
      const first = await r.claude(['-p', `Start ${planMarker('one')}`]);
      const before = modelCalls(r.proxy).length;
      await r.claude(['-p', '/compact', '--continue']);
      const compactCalls = modelCalls(r.proxy).slice(before);
      assert.equal(compactCalls.length, 1, 'one summary request');
      // The whole history, the plain answer included, then the instruction as a message of its own.
      const asked = messagesOf(r.gw.fake.requestsTo('/v1/messages').at(-1)!);
      assert.equal(asked.at(-2)?.role, 'assistant');
      assert.match(String(asked.at(-1)?.content), /^CRITICAL: Respond with TEXT ONLY/);
      const third = await r.claude(['-p', `Then ${planMarker('two')}`, '--continue']);
      assert.equal(third.out.result, 'Done after compacting.');

      const main = mainChat(first.out.session_id);
      const side = sessionHeader(compactCalls[0]!);
      assert.match(side, new RegExp(`^${re(main)}\\.side-summary-[0-9a-f]{12}$`));
      assert.ok(
        modelCalls(r.proxy)
          .filter((c) => c !== compactCalls[0])
          .every((c) => sessionHeader(c) === main),
        'every other request is logged in the session chat',
      );
      assert.deepEqual(await chatsOf(r.gw.url, main), [main, side].sort(), 'no branch');
      const texts = (await loggedMessages(r.gw.url, main)).map(loggedText);
      assert.ok(
        !texts.some((t) => t.includes('CRITICAL: Respond with TEXT ONLY')),
        'no summary request in it',
      );
      const events = await loggedEvents(r.gw.url, main);
      assert.equal(events.filter((e) => e.type === 'compaction').length, 1, 'the compaction is recorded');
    },
  );

  test(
    'the session-title request goes to a side chat; the conversation keeps the session chat',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Claude Code 2.1.332 sends its title request (RECORDED.md) through the SDK control request
      // generate_session_title; here it comes first, then the user's first turn.
      const r = await rig({
        plans: { hello: [say('Hello there.')] },
      });
      const cli = startLiveCli(
        claudeBin,
        [
          '-p',
          '--input-format',
          'stream-json',
          '--output-format',
          'stream-json',
          '--verbose',
          '--dangerously-skip-permissions',
          '--model',
          MODEL,
        ],
        { cwd: r.sb.cwd, env: claudeEnv(r.sb, r.proxy.url), timeoutMs: CLI_TIMEOUT_MS },
      );
      const isResponse = (id: string) => (l: unknown) =>
        isObj(l) && l.type === 'control_response' && isObj(l.response) && l.response.request_id === id;
      cli.send({ type: 'control_request', request_id: 'init', request: { subtype: 'initialize' } });
      await cli.waitFor(isResponse('init'), 'the initialize answer');
      cli.send({
        type: 'control_request',
        request_id: 'title',
        request: {
          subtype: 'generate_session_title',
          description: 'Fix the failing login test in the auth module',
          persist: false,
        },
      });
      const titled = await cli.waitFor(isResponse('title'), 'the title');
      assert.equal(dig(titled, ['response', 'response', 'title']), SIDE_TITLE);
      cli.send({
        type: 'user',
        message: { role: 'user', content: [{ type: 'text', text: `Say hello ${planMarker('hello')}` }] },
        parent_tool_use_id: null,
      });
      const result = await cli.waitFor((l) => isObj(l) && l.type === 'result', 'the result');
      assert.equal(dig(result, ['result']), 'Hello there.');
      const run = await cli.finish();
      assert.equal(run.timedOut, false, describeRun(run));

      const calls = modelCalls(r.proxy);
      assert.equal(calls.length, 2);
      const [title, turn] = calls as [ProxiedRequest, ProxiedRequest];
      assert.deepEqual(title.json?.tools, [], 'the title request offers no tools');
      assert.equal(dig(title.json, ['output_config', 'format', 'type']), 'json_schema');
      assert.equal(title.headers['x-claude-code-session-id'], turn.headers['x-claude-code-session-id']);
      const main = mainChat(String(turn.headers['x-claude-code-session-id']));

      assert.equal(sessionHeader(turn), main, 'the conversation is the session chat, not a branch');
      const side = String(sessionHeader(title));
      assert.match(
        side,
        new RegExp(`^${re(main)}\\.side-[a-z-]+-[0-9a-f]{12}$`),
        'the title is logged in a side chat',
      );
      assert.deepEqual(await chatsOf(r.gw.url, main), [main, side].sort());
      const info = await sessionInfo(r.gw.url, side);
      assert.equal(info.header.conversation?.kind, 'side');
      assert.equal(info.header.conversation?.session, main);
      assert.equal(info.header.parent, main);
      const sideTexts = (await loggedMessages(r.gw.url, side)).map(loggedText);
      assert.match(sideTexts[0]!, /Fix the failing login test/);
      assert.equal(sideTexts.at(-1), JSON.stringify({ title: SIDE_TITLE }));
      const mainTexts = (await loggedMessages(r.gw.url, main)).map(loggedText);
      assert.ok(
        !mainTexts.some((t) => t.includes('Fix the failing login test')),
        'the title request is not in the main chat',
      );
      assert.equal(mainTexts.at(-1), 'Hello there.');
      const tree = (await sessionInfo(r.gw.url, main)).conversations;
      assert.ok(tree && treeNodes(tree).some((n) => n.id === side && n.kind === 'side'));
    },
  );

  test(
    'a burst of four 529 overloaded answers: Claude Code retries on its own and completes',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const overloaded = { status: 529, json: bodies.anthropicOverloaded() };
      const r = await rig({ plans: { calm: [say('Survived the overload.')] } }, [
        overloaded,
        overloaded,
        overloaded,
        overloaded,
      ]);
      const { out } = await r.claude(['-p', `Answer ${planMarker('calm')}`]);
      assert.equal(out.result, 'Survived the overload.');

      // The gateway tried three times (retries.maxRetries 2), passed the 529 on without telling the
      // client to stop, and Claude Code's own retry got through.
      const provider = r.gw.fake.requestsTo('/v1/messages');
      assert.equal(provider.length, 5, 'four overloaded answers, then the answer');
      const calls = modelCalls(r.proxy);
      assert.equal(calls.length, 2, 'Claude Code sent the request twice');
      const [failed, retried] = calls as [ProxiedRequest, ProxiedRequest];
      assert.equal(failed.status, 529);
      assert.notEqual(failed.responseHeaders?.['x-should-retry'], 'false', 'the client is not told to stop');
      assert.equal(failed.responseHeaders?.['x-oda-attempts'], '3');
      assert.equal(retried.status, 200);
      // Claude Code retries in its own loop, not the SDK's: the retry says x-stainless-retry-count 0.
      assert.deepEqual(stripCache(retried.json?.messages), stripCache(failed.json?.messages));

      const main = mainChat(out.session_id);
      assert.deepEqual(await chatsOf(r.gw.url, main), [main]);
      const texts = (await loggedMessages(r.gw.url, main)).map(loggedText);
      assert.equal(
        texts.filter((t) => t.includes('[[plan:calm]]')).length,
        1,
        'the retried prompt is logged once',
      );
      assert.deepEqual(texts.slice(-1), ['Survived the overload.']);
    },
  );

  test(
    'a large Bash output (bashOutputMaxChars raised) is trimmed for the model, kept whole in the log',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      // Without the setting Claude Code itself sends a 2 KB preview and a file path (RECORDED.md).
      const r = await rig(
        {
          plans: {
            big: [bash('seq 1 20000', 'Print numbers'), say('Saw the numbers.')],
          },
        },
        [],
        {
          settings: { bashOutputMaxChars: 200_000 },
          // A small window puts the second request (~110 KB of messages, ~28k tokens by the gateway's
          // estimate) over the compaction point (0.8 of 20k).
          config: { config: { models: { 'claude-*': { contextWindow: 20_000 } } } },
        },
      );
      const { out } = await r.claude(['-p', `Count ${planMarker('big')}`]);
      assert.equal(out.result, 'Saw the numbers.');

      const sent = messagesOf(modelCalls(r.proxy).at(-1)!).flatMap(toolResultsOf)[0]!;
      const sentText = typeof sent.content === 'string' ? sent.content : JSON.stringify(sent.content);
      assert.ok(sentText.includes('\n19999\n20000'), 'Claude Code sent the whole output');
      assert.ok(sentText.length > 100_000);
      const received = messagesOf(r.gw.fake.requestsTo('/v1/messages').at(-1)!).flatMap(toolResultsOf)[0]!;
      const receivedText =
        typeof received.content === 'string' ? received.content : JSON.stringify(received.content);
      assert.ok(
        receivedText.length < 10_000,
        `the model got a trimmed result (${receivedText.length} chars)`,
      );
      assert.ok(receivedText.startsWith('1\n2\n3\n'), 'the head is kept');

      const main = mainChat(out.session_id);
      assert.deepEqual(await chatsOf(r.gw.url, main), [main]);
      const events = await loggedEvents(r.gw.url, main);
      assert.ok(
        events.some((e) => e.type === 'tool-result-trimmed'),
        'the trim is recorded',
      );
      const logged = events.filter((e) => e.type === 'message').map(loggedText);
      assert.ok(
        logged.some((t) => t.includes('\n19999\n20000')),
        'the log keeps the whole output',
      );
    },
  );
});

/** The working directory Claude Code states in its environment reminder. */
function cwdOf(req: RecordedRequest): string {
  const first = messagesOf(req)[0];
  const m = first ? /Primary working directory: (\S+)/.exec(textOf(first)) : null;
  assert.ok(m, 'the environment reminder names the working directory');
  return m[1]!;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function dig(v: unknown, path: string[]): unknown {
  let at = v;
  for (const k of path) at = isObj(at) ? at[k] : undefined;
  return at;
}
