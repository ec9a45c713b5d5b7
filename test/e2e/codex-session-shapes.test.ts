// A Codex session as the gateway logs it (SPEC section 10), in the shapes Codex 0.171 sends
// (test/clients/RECORDED.md): parallel function calls in the main thread, a sub-agent's thread (its
// own thread-id, the session's session-id) in a child chat, and a cold resume after a restart of the
// gateway (on the file store and on Redis) continuing the main chat.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startGateway,
  testStoreIsRedis,
  sharedRedisPrefix,
  type TestGateway,
} from '../helpers/start-gateway.ts';
import { dropPrefix } from '../helpers/redis-test.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import {
  responsesMessage,
  responsesFunctionCall,
  responsesReasoning,
} from '../fake-provider/fake-responses.ts';

const S = '01a22f90-d234-7401-b4e2-f5d7f17ac58b';
const T = '01a22f90-d999-7401-b4e2-f5d7f17ac58b';
const MAIN = `session:${S}`;
type Item = Record<string, unknown>;
const user = (text: string): Item => ({
  type: 'message',
  role: 'user',
  content: [{ type: 'input_text', text }],
});
const dev: Item = {
  type: 'message',
  role: 'developer',
  content: [{ type: 'input_text', text: 'You are a coding agent running in the Codex CLI.' }],
};
const env = user('<environment_context>\n  <cwd>/project</cwd>\n</environment_context>');

async function call(
  gw: TestGateway,
  input: Item[],
  output: Item[],
  meta: Record<string, unknown> = {},
  thread = S,
) {
  gw.fake.script({ responses: { output } });
  const md = {
    session_id: S,
    thread_id: thread,
    turn_id: 't',
    request_kind: 'turn',
    thread_source: thread === S ? 'user' : 'subagent',
    ...meta,
  };
  const res = await fetch(`${gw.url}/v1/responses`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer sk',
      'session-id': S,
      'thread-id': thread,
      'x-codex-turn-metadata': JSON.stringify(md),
    },
    body: JSON.stringify({
      model: 'gpt-5.1-codex',
      store: false,
      parallel_tool_calls: true,
      prompt_cache_key: S,
      tools: [{ type: 'function', name: 'exec_command', parameters: { type: 'object', properties: {} } }],
      input,
    }),
  });
  const body = (await res.json()) as { output: Item[] };
  assert.equal(res.status, 200, JSON.stringify(body));
  return { chat: res.headers.get('x-session-id')!, output: body.output };
}
async function ids(gw: TestGateway): Promise<string[]> {
  const body = (await (await fetch(`${gw.url}/v1/sessions?limit=500`)).json()) as {
    data: Array<{ id: string }>;
  };
  return body.data.map((s) => s.id).sort();
}
const roles = async (gw: TestGateway, id: string) =>
  eventsOfType(await sessionEvents(gw.url, id), 'message').map((m) => m.role);

describe('a Codex session in the log', () => {
  let dataDir: string;
  let gw: TestGateway;
  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'oda-probe-'));
    gw = await startGateway({ dataDir });
  });
  after(async () => {
    await gw?.close();
    if (testStoreIsRedis) await dropPrefix(sharedRedisPrefix(dataDir));
    rmSync(dataDir, { recursive: true, force: true });
  });
  let hist: Item[] = [dev, env, user('Run the plan')];
  test('main with parallel calls, a sub-agent thread, resume after restart', async () => {
    const r1 = await call(gw, hist, [
      responsesReasoning('thinking', 'enc1', 'rs_1'),
      responsesFunctionCall('exec_command', '{"cmd":"a"}', 'call_a'),
      responsesFunctionCall('exec_command', '{"cmd":"b"}', 'call_b'),
    ]);
    assert.equal(r1.chat, MAIN);
    hist = [
      ...hist,
      ...r1.output,
      { type: 'function_call_output', call_id: 'call_a', output: 'A' },
      { type: 'function_call_output', call_id: 'call_b', output: 'B' },
    ];
    // sub-agent thread
    let sub: Item[] = [dev, env, user('Sub task: look at the files')];
    const s1 = await call(
      gw,
      sub,
      [responsesFunctionCall('exec_command', '{"cmd":"s"}', 'call_s')],
      { parent_thread_id: S, subagent_kind: 'thread_spawn' },
      T,
    );
    assert.equal(s1.chat, `${MAIN}.agent-${T}`);
    sub = [...sub, ...s1.output, { type: 'function_call_output', call_id: 'call_s', output: 'S' }];
    const s2 = await call(
      gw,
      sub,
      [responsesMessage('Sub done.', 'msg_s2')],
      { parent_thread_id: S, subagent_kind: 'thread_spawn' },
      T,
    );
    assert.equal(s2.chat, `${MAIN}.agent-${T}`);
    const r2 = await call(gw, hist, [responsesMessage('All done.', 'msg_2')]);
    assert.equal(r2.chat, MAIN);
    hist = [...hist, ...r2.output];
    await gw.close();
    gw = await startGateway({ dataDir });
    const r3 = await call(gw, [...hist, user('Now more')], [responsesMessage('More done.', 'msg_3')], {
      history_initialization: 'cold_resume',
    });
    assert.equal(r3.chat, MAIN);
    assert.deepEqual(await roles(gw, MAIN), [
      'developer',
      'user',
      'user',
      'model',
      'model',
      'model',
      'tool',
      'tool',
      'model',
      'user',
      'model',
    ]);
    const subInfo = (await (
      await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(`${MAIN}.agent-${T}`)}`)
    ).json()) as {
      header: { parent?: string };
      conversations: { id: string; children: Array<{ id: string }> };
    };
    assert.equal(subInfo.header.parent, MAIN);
    assert.equal(subInfo.conversations.id, MAIN);
    assert.deepEqual(
      subInfo.conversations.children.map((n) => n.id),
      [`${MAIN}.agent-${T}`],
    );
    assert.deepEqual(
      (await ids(gw)).filter((i) => i.includes('.b')),
      [],
    );
  });
});
