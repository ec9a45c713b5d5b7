// The real Codex CLI (npm @openai/codex, pinned in test/clients/package.json) driven headless
// (`codex exec`) through the gateway's POST /v1/responses against a scripted Responses model, with
// a recording proxy between the CLI and the gateway. Each test asserts on what Codex printed, on
// what the provider received, and on the chats the gateway logged (SPEC sections 9 and 10).
import { after, afterEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { startRecordingProxy, type ProxiedRequest, type RecordingProxy } from './recording-proxy.ts';
import { scriptMany } from './anthropic-agent.ts';
import { codexModel, inputItems, itemText, type ResponsesScriptPlan } from './responses-agent.ts';
import {
  clisInstalled,
  codexBin,
  codexEnv,
  describeRun,
  fakeOpenaiKey,
  makeSandbox,
  runCli,
  writeCodexConfig,
  type CliResult,
  type CliSandbox,
} from './cli-run.ts';
import { chatsOf, loggedEvents, loggedMessages, loggedText, sessionInfo, treeNodes } from './gateway-log.ts';

const CLI_TIMEOUT_MS = 90_000;
const TEST_TIMEOUT_MS = 240_000;

const skip = clisInstalled ? false : 'the real CLIs are not installed (npm run test:clients installs them)';

interface Rig {
  gw: TestGateway;
  proxy: RecordingProxy;
  sb: CliSandbox;
  /** Runs `codex exec <args>`; returns the run and the session id Codex printed. */
  codex(args: string[]): Promise<{ run: CliResult; sessionId: string }>;
  close(): Promise<void>;
}

const open: Rig[] = [];

/**
 * `config`: lines put before the rest of Codex's config.toml. `builtin`: Codex's own OpenAI provider
 * pointed at the gateway (`openai_base_url`, the key in `OPENAI_API_KEY`) instead of a custom one.
 */
async function rig(script: ResponsesScriptPlan, config: string[] = [], builtin = false): Promise<Rig> {
  const gw = await startGateway();
  scriptMany(gw.fake, codexModel(script), 200);
  const proxy = await startRecordingProxy(gw.url);
  const sb = makeSandbox('codex');
  writeCodexConfig(sb, `${proxy.url}/v1`);
  const file = join(sb.home, '.codex', 'config.toml');
  let toml = readFileSync(file, 'utf8');
  if (builtin) {
    toml = `openai_base_url = "${proxy.url}/v1"\n${toml.replace('model_provider = "oda"\n', '')}`;
  }
  writeFileSync(file, `${config.map((l) => `${l}\n`).join('')}${toml}`);
  const env = codexEnv(sb, builtin ? { OPENAI_API_KEY: fakeOpenaiKey } : {});
  const r: Rig = {
    gw,
    proxy,
    sb,
    async codex(args) {
      const run = await runCli(process.execPath, [codexBin, 'exec', '--skip-git-repo-check', ...args], {
        cwd: sb.cwd,
        env,
        timeoutMs: CLI_TIMEOUT_MS,
      });
      assert.equal(run.code, 0, `codex exec ${args.join(' ')}: ${describeRun(run)}`);
      const id = /session id: ([0-9a-f-]{36})/.exec(run.stderr)?.[1];
      assert.ok(id, `codex printed its session id: ${describeRun(run)}`);
      return { run, sessionId: id };
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

const modelCalls = (p: RecordingProxy) => p.requestsTo('/v1/responses');
const sessionHeader = (r: ProxiedRequest) => r.responseHeaders?.['x-session-id'];
const turnMetadata = (r: ProxiedRequest): Record<string, unknown> =>
  JSON.parse(String(r.headers['x-codex-turn-metadata'] ?? '{}')) as Record<string, unknown>;
const shellPlan = (word: string) => [
  [{ type: 'function_call' as const, name: 'exec_command', arguments: { cmd: `echo ${word}` } }],
  [{ type: 'message' as const, text: `${word} done.` }],
];

/**
 * Asserts that session chat `main` went on through one compaction: no branch of it, the compaction
 * recorded in it. Returns the texts of its logged messages.
 */
async function compactedOnce(r: Rig, main: string): Promise<string[]> {
  assert.deepEqual(
    (await chatsOf(r.gw.url, main)).filter((id) => !id.includes('.side-')),
    [main],
    'no branch for the compaction',
  );
  const events = await loggedEvents(r.gw.url, main);
  assert.equal(events.filter((e) => e.type === 'compaction').length, 1, 'the compaction is recorded');
  return (await loggedMessages(r.gw.url, main)).map(loggedText);
}

describe('Codex through the gateway', { skip, timeout: TEST_TIMEOUT_MS * 3 }, () => {
  test(
    'codex exec completes a shell-tool loop through /v1/responses and lands in one chat',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({ plans: { shell: shellPlan('codex-step') } });
      const { run, sessionId } = await r.codex(['Run the plan [[plan:shell]]']);
      assert.equal(run.stdout.trim(), 'codex-step done.');

      // What the provider received: the stateless history, the shell output fed back.
      const calls = r.gw.fake.requestsTo('/v1/responses');
      assert.equal(calls.length, 2);
      assert.ok(calls.every((c) => c.json?.stream === true && c.json?.store === false));
      const output = inputItems(calls[1]!).find((i) => i.type === 'function_call_output');
      assert.match(String(output?.output), /Output:\ncodex-step\n/);
      assert.equal(calls[1]!.headers['session-id'], sessionId);

      // What the gateway logged: one chat named by Codex's session id, holding the whole loop.
      const main = `session:${sessionId}`;
      assert.deepEqual(modelCalls(r.proxy).map(sessionHeader), [main, main]);
      assert.deepEqual(await chatsOf(r.gw.url, main), [main]);
      const messages = await loggedMessages(r.gw.url, main);
      const texts = messages.map(loggedText);
      assert.ok(
        messages.some(
          (m) =>
            m.role === 'developer' &&
            loggedText(m).includes('You are a coding agent running in the Codex CLI'),
        ),
        "Codex's developer messages are in the log",
      );
      const order = [
        '[[plan:shell]]',
        'exec_command({"cmd":"echo codex-step"})',
        'codex-step',
        'codex-step done.',
      ];
      let at = 0;
      for (const t of texts) if (at < order.length && t.includes(order[at]!)) at++;
      assert.equal(at, order.length, `the log holds the loop in order; got:\n${texts.join('\n---\n')}`);
      assert.equal(texts.filter((t) => t === 'codex-step done.').length, 1);
    },
  );

  test('codex exec resume --last continues the same chat', { timeout: TEST_TIMEOUT_MS }, async () => {
    const r = await rig({ plans: { one: shellPlan('first'), two: shellPlan('second') } });
    const first = await r.codex(['Start [[plan:one]]']);
    const second = await r.codex(['resume', '--last', 'Go on [[plan:two]]']);
    assert.equal(second.sessionId, first.sessionId);
    assert.equal(second.run.stdout.trim(), 'second done.');
    const calls = modelCalls(r.proxy);
    assert.equal(turnMetadata(calls[2]!).history_initialization, 'cold_resume');

    const main = `session:${first.sessionId}`;
    assert.ok(calls.every((c) => sessionHeader(c) === main));
    assert.deepEqual(await chatsOf(r.gw.url, main), [main], 'no branch for a resumed session');
    const texts = (await loggedMessages(r.gw.url, main)).map(loggedText);
    assert.equal(texts.filter((t) => t === 'first done.').length, 1, 'the earlier turn is logged once');
    assert.equal(texts.at(-1), 'second done.');
  });

  test(
    "Codex's auto-compaction: the compaction request is a side chat, the compacted history continues the main chat",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const summary = [
        'The user asked to start the work; the first step ran and its answer was given to the user.',
        'No file was changed and no command is still running in the background of the session.',
        'Next: go on with whatever the user asks for next, starting from this summary of the work.',
      ].join('\n');
      const lastText = (req: { json: Record<string, unknown> | undefined }) =>
        itemText(inputItems(req).at(-1) ?? {});
      // A small auto-compaction limit makes Codex compact before the second run's first turn.
      const r = await rig(
        {
          plans: {
            one: [
              (req) => [
                {
                  type: 'message',
                  text: /CHECKPOINT COMPACTION/.test(lastText(req)) ? summary : 'one done.',
                },
              ],
            ],
            two: [[{ type: 'message', text: 'two done.' }]],
          },
        },
        ['model_auto_compact_token_limit = 3000', 'model_context_window = 20000'],
      );
      const first = await r.codex(['Start [[plan:one]]']);
      assert.equal(first.run.stdout.trim(), 'one done.');
      const second = await r.codex(['resume', '--last', 'Go on [[plan:two]]']);
      assert.equal(second.run.stdout.trim(), 'two done.');

      const calls = modelCalls(r.proxy);
      const kinds = calls.map((c) => turnMetadata(c).request_kind);
      assert.deepEqual(kinds, ['turn', 'compaction', 'turn'], 'Codex compacted between the two turns');
      const main = `session:${first.sessionId}`;
      assert.equal(sessionHeader(calls[0]!), main);
      assert.match(
        String(sessionHeader(calls[1]!)),
        new RegExp(`^${main.replace(/[.:-]/g, '\\$&')}\\.side-compaction-`),
      );
      // What Codex sent after compacting: the summary in a user message after the kept ones.
      assert.ok(
        inputItems(calls[2]!).some((i) => i.role === 'user' && itemText(i).includes(summary.split('\n')[0]!)),
      );
      assert.equal(sessionHeader(calls[2]!), main, 'the compacted history continues the main chat');

      const texts = await compactedOnce(r, main);
      assert.equal(texts.filter((t) => t === 'one done.').length, 1);
      assert.equal(texts.at(-1), 'two done.');
    },
  );

  test(
    'Codex on its built-in OpenAI provider: its WebSocket attempt is a 426, so it goes over HTTP at once',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({ plans: { shell: shellPlan('builtin-step') } }, [], true);
      const { run, sessionId } = await r.codex(['Run the plan [[plan:shell]]']);
      assert.equal(run.stdout.trim(), 'builtin-step done.');
      const attempts = r.proxy.requestsTo('/v1/responses');
      const handshakes = attempts.filter((c) => c.method === 'GET');
      // One handshake, answered 426 (naming plain HTTP/1.1 in Upgrade, as a 426 must), and no retry
      // of it (a 404 had Codex retry it six more times).
      assert.deepEqual(
        handshakes.map((c) => [
          String(c.headers.upgrade).toLowerCase(),
          c.status,
          c.responseHeaders?.upgrade,
        ]),
        [['websocket', 426, 'HTTP/1.1']],
      );
      const posts = attempts.filter((c) => c.method === 'POST');
      assert.equal(posts.length, 2, 'the tool loop went over HTTP');
      assert.deepEqual(
        posts.map((c) => sessionHeader(c)),
        posts.map(() => `session:${sessionId}`),
      );
    },
  );

  test(
    'Codex on its built-in OpenAI provider: remote compaction goes to the provider, the compacted history continues the main chat',
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const compacted = (req: { json: Record<string, unknown> | undefined }) =>
        inputItems(req).at(-1)?.type === 'compaction_trigger';
      const r = await rig(
        {
          plans: {
            one: [
              (req) =>
                compacted(req)
                  ? [{ type: 'compaction', encrypted_content: 'gAAAA-compacted-history' }]
                  : [{ type: 'message', text: 'one done.' }],
            ],
            two: [[{ type: 'message', text: 'two done.' }]],
          },
        },
        ['model_auto_compact_token_limit = 3000', 'model_context_window = 20000'],
        true,
      );
      const first = await r.codex(['Start [[plan:one]]']);
      assert.equal(first.run.stdout.trim(), 'one done.');
      const second = await r.codex(['resume', '--last', 'Go on [[plan:two]]']);
      assert.equal(second.run.stdout.trim(), 'two done.');
      const posts = r.proxy.requestsTo('/v1/responses').filter((c) => c.method === 'POST');
      assert.deepEqual(
        posts.map((c) => turnMetadata(c).request_kind),
        ['turn', 'compaction', 'turn'],
        'Codex compacted between the two turns',
      );
      // The compaction went to the provider as Codex sent it; its opaque answer came back in the next turn.
      assert.ok(compacted(r.gw.fake.requestsTo('/v1/responses')[1]!));
      assert.ok(inputItems(posts[2]!).some((i) => i.type === 'compaction'));
      const main = `session:${first.sessionId}`;
      assert.deepEqual(
        posts.map((c) =>
          sessionHeader(c)
            ?.toString()
            .replace(/side-compaction-[0-9a-f]+$/, 'side'),
        ),
        [main, `${main}.side`, main],
        'the compacted history continues the main chat',
      );
      assert.equal((await compactedOnce(r, main)).at(-1), 'two done.');
    },
  );

  test(
    "a spawned sub-agent's thread is a child chat named after its thread id",
    { timeout: TEST_TIMEOUT_MS },
    async () => {
      const r = await rig({
        plans: {
          delegate: [
            [
              {
                type: 'function_call',
                namespace: 'multi_agent_v1',
                name: 'spawn_agent',
                arguments: { message: 'Sub task [[plan:sub]]' },
              },
            ],
            (req) => {
              const spawned = inputItems(req).find((i) => i.type === 'function_call_output');
              const agentId = /"agent_id":"([^"]+)"/.exec(String(spawned?.output))?.[1] ?? 'unknown';
              return [
                {
                  type: 'function_call',
                  namespace: 'multi_agent_v1',
                  name: 'wait_agent',
                  arguments: { targets: [agentId], timeout_ms: 30000 },
                },
              ];
            },
            [{ type: 'message', text: 'Delegation done.' }],
          ],
          sub: shellPlan('sub-step'),
        },
      });
      const { run, sessionId } = await r.codex(['Delegate [[plan:delegate]]']);
      assert.equal(run.stdout.trim(), 'Delegation done.');

      const calls = modelCalls(r.proxy);
      const subCalls = calls.filter((c) => c.headers['thread-id'] !== sessionId);
      assert.equal(subCalls.length, 2, 'the sub-agent made its own two calls');
      const thread = String(subCalls[0]!.headers['thread-id']);
      assert.equal(turnMetadata(subCalls[0]!).thread_source, 'subagent');
      assert.equal(turnMetadata(subCalls[0]!).parent_thread_id, sessionId);
      assert.ok(subCalls.every((c) => c.headers['session-id'] === sessionId));
      assert.match(
        inputItems(r.gw.fake.requestsTo('/v1/responses').find((c) => c.headers['thread-id'] === thread)!)
          .map(itemText)
          .join('\n'),
        /Sub task \[\[plan:sub\]\]/,
      );

      const main = `session:${sessionId}`;
      const child = `${main}.agent-${thread}`;
      for (const c of calls)
        assert.equal(sessionHeader(c), c.headers['thread-id'] === sessionId ? main : child);
      assert.deepEqual(await chatsOf(r.gw.url, main), [main, child].sort());
      const info = await sessionInfo(r.gw.url, child);
      assert.equal(info.header.parent, main);
      assert.deepEqual(info.header.conversation, { kind: 'subagent', session: main, agentId: thread });
      const childTexts = (await loggedMessages(r.gw.url, child)).map(loggedText);
      assert.ok(childTexts.some((t) => t.includes('sub-step')));
      assert.equal(childTexts.at(-1), 'sub-step done.');
      const mainTexts = (await loggedMessages(r.gw.url, main)).map(loggedText);
      assert.ok(mainTexts.some((t) => t.includes('<subagent_notification>')));
      assert.ok(
        !mainTexts.some((t) => t.includes('echo sub-step')),
        "the sub-agent's calls are not in the main chat",
      );
      const tree = (await sessionInfo(r.gw.url, main)).conversations;
      assert.ok(tree && treeNodes(tree).some((n) => n.id === child && n.kind === 'subagent'));
    },
  );
});
