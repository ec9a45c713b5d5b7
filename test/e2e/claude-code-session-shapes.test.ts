// A Claude Code session as the gateway logs it (SPEC section 10), in the shapes Claude Code sends
// (test/clients/RECORDED.md): a streamed main loop with thinking and parallel tool calls, a
// sub-agent's two turns, a title request in the middle, the session resumed after a restart of the
// gateway (on the file store and on Redis), an edit of the last prompt (a branch with its parent and
// fork point), the session's chats adding up to the usage ledger, and two concurrent sessions with
// the same first message kept apart by their x-session-id.
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
import { anthropicMessage, type SseEvent } from '../fake-provider/fake-bodies.ts';

const SESSION = '9603310b-7752-4d78-8aa4-033825854632';
const MAIN = `claude-code:${SESSION}`;
const tools = [
  { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: {} } },
  { name: 'Agent', description: 'Run a sub-agent', input_schema: { type: 'object', properties: {} } },
];
const system = [
  { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332.798; cc_entrypoint=sdk-cli;' },
  { type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } },
];

type Msg = { role: 'user' | 'assistant'; content: unknown };
interface Node {
  id: string;
  kind: string;
  parent?: string;
  children: Node[];
}
interface Usage {
  answered: number;
  inputTokens: number;
  cacheWriteTokens: number;
  cacheWrite1hTokens: number;
  cacheReadTokens: number;
  outputTokens: number;
}
const partText = (p: object): string | undefined => ('text' in p ? String(p.text) : undefined);

const ev = (event: string, data: unknown): SseEvent => ({ event, data: JSON.stringify(data) });
/** A streamed answer: thinking (with signature), text, and tool uses. */
function answerStream(id: string, text: string, uses: Array<{ id: string; input: unknown }>): SseEvent[] {
  const out: SseEvent[] = [
    ev('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: 'claude-x',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 100,
          output_tokens: 1,
          cache_creation_input_tokens: 20,
          cache_read_input_tokens: 30,
        },
      },
    }),
    ev('content_block_start', {
      type: 'content_block_start',
      index: 0,
      content_block: { type: 'thinking', thinking: '', signature: '' },
    }),
    ev('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'thinking_delta', thinking: 'hmm ' + id },
    }),
    ev('content_block_delta', {
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'signature_delta', signature: 'sig-' + id },
    }),
    ev('content_block_stop', { type: 'content_block_stop', index: 0 }),
    ev('content_block_start', {
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'text', text: '' },
    }),
    ev('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text } }),
    ev('content_block_stop', { type: 'content_block_stop', index: 1 }),
  ];
  uses.forEach((u, i) => {
    out.push(
      ev('content_block_start', {
        type: 'content_block_start',
        index: 2 + i,
        content_block: { type: 'tool_use', id: u.id, name: 'Bash', input: {} },
      }),
      ev('content_block_delta', {
        type: 'content_block_delta',
        index: 2 + i,
        delta: { type: 'input_json_delta', partial_json: JSON.stringify(u.input) },
      }),
      ev('content_block_stop', { type: 'content_block_stop', index: 2 + i }),
    );
  });
  out.push(
    ev('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: uses.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: 9 },
    }),
    ev('message_stop', { type: 'message_stop' }),
  );
  return out;
}
function asMessage(id: string, text: string, uses: Array<{ id: string; input: unknown }>): Msg {
  return {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'hmm ' + id, signature: 'sig-' + id },
      { type: 'text', text },
      ...uses.map((u) => ({ type: 'tool_use', id: u.id, name: 'Bash', input: u.input })),
    ],
  };
}

async function call(gw: TestGateway, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': 'sk-ant-test',
      'anthropic-version': '2023-06-01',
      'x-claude-code-session-id': SESSION,
      ...headers,
    },
    body: JSON.stringify({ model: 'claude-x', max_tokens: 32000, stream: true, system, tools, ...body }),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return res.headers.get('x-session-id')!;
}

async function info(gw: TestGateway, id: string) {
  const res = await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(id)}`);
  assert.equal(res.status, 200);
  return (await res.json()) as { header: Record<string, unknown>; conversations: Node; usage: Usage };
}
async function ids(gw: TestGateway): Promise<string[]> {
  const body = (await (await fetch(`${gw.url}/v1/sessions?limit=500`)).json()) as {
    data: Array<{ id: string }>;
  };
  return body.data.map((s) => s.id).sort();
}
const texts = async (gw: TestGateway, id: string) =>
  eventsOfType(await sessionEvents(gw.url, id), 'message').map(
    (m) => `${m.role}:` + m.content.map((p) => partText(p) ?? p.kind).join('|'),
  );

function u(text: string, cache = true): Msg {
  return {
    role: 'user',
    content: [{ type: 'text', text, ...(cache ? { cache_control: { type: 'ephemeral' } } : {}) }],
  };
}
function strip(m: Msg): Msg {
  // cache_control moves: gone from earlier blocks
  if (!Array.isArray(m.content)) return m;
  return {
    ...m,
    content: (m.content as Array<Record<string, unknown>>).map(({ cache_control: _c, ...b }) => b),
  };
}
function results(pairs: Array<[string, string]>): Msg {
  return {
    role: 'user',
    content: pairs.map(([id, out], i) => ({
      type: 'tool_result',
      tool_use_id: id,
      content: out,
      is_error: false,
      ...(i === pairs.length - 1 ? { cache_control: { type: 'ephemeral' } } : {}),
    })),
  };
}

describe('a Claude Code session in the log', () => {
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

  const hist: Msg[] = [];
  test('main loop with parallel tool calls, sub-agent, title mid-session', async () => {
    hist.push(u('Run the plan'));
    gw.fake.script({
      sse: answerStream('m1', 'Two at once.', [
        { id: 'toolu_a', input: { cmd: 'a' } },
        { id: 'toolu_b', input: { cmd: 'b' } },
      ]),
    });
    assert.equal(await call(gw, { messages: hist }), MAIN);
    hist[0] = strip(hist[0]!);
    hist.push(
      asMessage('m1', 'Two at once.', [
        { id: 'toolu_a', input: { cmd: 'a' } },
        { id: 'toolu_b', input: { cmd: 'b' } },
      ]),
    );
    hist.push(
      results([
        ['toolu_a', 'A'],
        ['toolu_b', 'B'],
      ]),
    );
    // sub-agent starts (its own first turn) while main waits
    gw.fake.script({ sse: answerStream('s1', 'Sub step.', [{ id: 'toolu_s', input: { cmd: 's' } }]) });
    const subHist: Msg[] = [u('find things')];
    const sub = await call(
      gw,
      {
        system: [
          { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332.850; cc_is_subagent=true;' },
          { type: 'text', text: 'You are a sub-agent.' },
        ],
        messages: subHist,
      },
      { 'x-claude-code-agent-id': 'a84ffb45e5d28a315' },
    );
    assert.equal(sub, `${MAIN}.agent-a84ffb45e5d28a315`);
    subHist[0] = strip(subHist[0]!);
    subHist.push(
      asMessage('s1', 'Sub step.', [{ id: 'toolu_s', input: { cmd: 's' } }]),
      results([['toolu_s', 'S']]),
    );
    gw.fake.script({ sse: answerStream('s2', 'Sub task done.', []) });
    assert.equal(
      await call(
        gw,
        {
          system: [
            {
              type: 'text',
              text: 'x-anthropic-billing-header: cc_version=2.1.332.850; cc_is_subagent=true;',
            },
            { type: 'text', text: 'You are a sub-agent.' },
          ],
          messages: subHist,
        },
        { 'x-claude-code-agent-id': 'a84ffb45e5d28a315' },
      ),
      sub,
      'sub-agent turn 2 continues its chat',
    );
    // title request mid-session
    gw.fake.script({ json: anthropicMessage('claude-haiku', '{"title":"Plan"}') });
    const title = await call(gw, {
      model: 'claude-haiku',
      max_tokens: 128000,
      system: [{ type: 'text', text: 'You are naming a coding session' }],
      tools: [],
      output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
      messages: [{ role: 'user', content: [{ type: 'text', text: '<session>\nRun the plan\n</session>' }] }],
    });
    assert.match(title, /\.side-structured-/);
    gw.fake.script({ sse: answerStream('m2', 'Done.', []) });
    assert.equal(await call(gw, { messages: hist }), MAIN);
    hist[2] = strip(hist[2]!);
    hist.push(asMessage('m2', 'Done.', []));
    const t = await texts(gw, MAIN);
    assert.deepEqual(
      t,
      [
        'user:Run the plan',
        'model:hmm m1|Two at once.|tool-call|tool-call',
        'tool:tool-result',
        'tool:tool-result',
        'model:hmm m2|Done.',
      ].map((x) => x),
      JSON.stringify(t),
    );
  });

  test('resume after restart continues the main chat', async () => {
    await gw.close();
    gw = await startGateway({ dataDir });
    hist.push(u('Now the big one'));
    gw.fake.script({ sse: answerStream('m3', 'Big done.', []) });
    assert.equal(await call(gw, { messages: hist }), MAIN);
    hist[hist.length - 1] = strip(hist.at(-1)!);
    hist.push(asMessage('m3', 'Big done.', []));
    // sub-agent resumes after restart too
    assert.deepEqual(
      (await ids(gw)).filter((i) => i.includes('.b')),
      [],
    );
  });

  test('a branch: edit of the last prompt', async () => {
    const edited = [...hist.slice(0, -2), u('Now the small one')];
    gw.fake.script({ sse: answerStream('m4', 'Small done.', []) });
    const b = await call(gw, { messages: edited });
    assert.match(b, /\.b[0-9a-f]{12}$/);
    const bi = await info(gw, b);
    assert.deepEqual(bi.header.conversation, { kind: 'branch', session: MAIN });
    assert.equal(bi.header.parent, MAIN);
    const mainEvents = await sessionEvents(gw.url, MAIN);
    const forked = eventsOfType(mainEvents, 'message').find((m) =>
      m.content.some((p) => partText(p) === 'Now the big one'),
    )!;
    assert.equal(
      bi.header.inheritedEvents,
      forked.seq,
      'the branch inherits the events before the edited message',
    );
    const tree = (await info(gw, MAIN)).conversations;
    assert.deepEqual(
      tree.children
        .map((n) => `${n.kind} ${n.id.slice(MAIN.length)} <- ${n.parent?.slice(MAIN.length) ?? '?'}`)
        .sort(),
      [
        `branch ${b.slice(MAIN.length)} <- `,
        'side .side-structured-660ff6c54298 <- ',
        'subagent .agent-a84ffb45e5d28a315 <- ',
      ],
    );
  });

  test("the session's chats add up to the usage ledger", async () => {
    const sum: Usage = {
      answered: 0,
      inputTokens: 0,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      outputTokens: 0,
    };
    for (const id of await ids(gw)) {
      const { usage } = await info(gw, id);
      for (const k of Object.keys(sum) as Array<keyof Usage>) sum[k] += usage[k];
    }
    const ledger = (await (await fetch(`${gw.url}/v1/usage`)).json()) as {
      total: { answered: number; usage: Omit<Usage, 'answered'> };
    };
    assert.deepEqual(sum, { answered: ledger.total.answered, ...ledger.total.usage });
    assert.equal(sum.answered, 7, 'main 3, sub-agent 2, title 1, branch 1');
  });

  test('two sessions with the same first message and different x-session-id stay apart', async () => {
    const mk = (sid: string) =>
      fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': 'k',
          'anthropic-version': '2023-06-01',
          'x-session-id': sid,
        },
        body: JSON.stringify({
          model: 'claude-x',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'same first' }],
        }),
      });
    gw.fake.script(
      { json: anthropicMessage('claude-x', 'ans-1') },
      { json: anthropicMessage('claude-x', 'ans-2') },
    );
    const [r1, r2] = await Promise.all([mk('sess-A'), mk('sess-B')]);
    assert.equal(r1.headers.get('x-session-id'), 'sess-A');
    assert.equal(r2.headers.get('x-session-id'), 'sess-B');
    assert.equal((await texts(gw, 'sess-A')).length, 2);
    assert.equal((await texts(gw, 'sess-B')).length, 2);
  });
});
