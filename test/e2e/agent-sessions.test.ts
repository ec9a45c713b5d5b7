// Agent sessions as their users see them (SPEC section 10): the main conversation under the
// session id whatever came first, side requests in side chats, sub-agents in child chats named
// after their agent id, a compaction that continues its chat, branches only for true edits, and
// the session's tree in GET /v1/sessions/{id}. Requests are shaped as Claude Code sends them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { anthropicMessage } from '../fake-provider/fake-bodies.ts';

const SESSION = '0b6f1d1e-3c43-4c7a-9a59-1f2d1b7a6c01';
const MAIN = `claude-code:${SESSION}`;
const tools = [
  { name: 'Bash', description: 'Run a command', input_schema: { type: 'object' as const, properties: {} } },
];
const system = 'You are Claude Code, an agent for software engineering.';

interface Node {
  id: string;
  kind: string;
  purpose?: string;
  agentId?: string;
  parent?: string;
  children: Node[];
}

function client(gw: TestGateway, extra: Record<string, string> = {}): Anthropic {
  return new Anthropic({
    baseURL: gw.url,
    apiKey: 'sk-ant-test',
    maxRetries: 0,
    defaultHeaders: { 'x-claude-code-session-id': SESSION, ...extra },
  });
}

/** The x-session-id of an SDK call's answer (the SDKs' APIPromise gives the raw response). */
async function withSessionId(p: { withResponse(): Promise<{ response: Response }> }): Promise<string> {
  return (await p.withResponse()).response.headers.get('x-session-id')!;
}

async function sessionInfo(
  gw: TestGateway,
  id: string,
): Promise<{ header: Record<string, unknown>; conversations: Node }> {
  const res = await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(id)}`);
  assert.equal(res.status, 200);
  return (await res.json()) as { header: Record<string, unknown>; conversations: Node };
}

async function chatIds(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/sessions?limit=500`);
  const body = (await res.json()) as { sessions?: Array<{ id: string }>; data?: Array<{ id: string }> };
  return (body.data ?? body.sessions ?? []).map((s) => s.id).sort();
}

describe('a Claude Code session is logged as its user sees it', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  test('the title request that comes first goes to a side chat; the conversation takes the session chat', async () => {
    const c = client(gw);
    gw.fake.script({ json: anthropicMessage('claude-x', '{"title":"Fix the build"}') });
    const titleChat = await withSessionId(
      c.messages.create({
        model: 'claude-x',
        max_tokens: 512,
        system: 'Generate a concise title for this coding session.',
        messages: [{ role: 'user', content: 'please fix the build' }],
        // Structured output, as Claude Code's title request asks for it.
        output_config: {
          format: {
            type: 'json_schema',
            schema: { type: 'object', properties: { title: { type: 'string' } } },
          },
        },
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
    );
    assert.match(titleChat, new RegExp(`^${MAIN.replace(/[.:-]/g, '\\$&')}\\.side-structured-[0-9a-f]{12}$`));

    gw.fake.script({ json: anthropicMessage('claude-x', 'Looking at the build.') });
    const mainChat = await withSessionId(
      c.messages.create({
        model: 'claude-x',
        max_tokens: 512,
        system,
        tools,
        messages: [{ role: 'user', content: 'please fix the build' }],
      }),
    );
    assert.equal(mainChat, MAIN, 'the main conversation is the session chat, not a branch');

    // A quota probe (one token, no tools) is a side request too.
    gw.fake.script({ json: anthropicMessage('claude-x', 'ok') });
    const quotaChat = await withSessionId(
      c.messages.create({ model: 'claude-x', max_tokens: 1, messages: [{ role: 'user', content: 'quota' }] }),
    );
    assert.match(quotaChat, /\.side-quota-[0-9a-f]{12}$/);

    const mainEvents = await sessionEvents(gw.url, MAIN);
    const texts = eventsOfType(mainEvents, 'message').map((m) =>
      m.content.map((p) => ('text' in p ? p.text : '')).join(''),
    );
    assert.deepEqual(texts, ['please fix the build', 'Looking at the build.']);
    const side = await sessionInfo(gw, titleChat);
    assert.deepEqual(side.header.conversation, { kind: 'side', session: MAIN, purpose: 'structured' });
    assert.equal(side.header.parent, MAIN);
  });

  test("a sub-agent's conversation is a child chat named after its agent id", async () => {
    gw.fake.script({ json: anthropicMessage('claude-x', 'Found 3 files.') });
    const agentChat = await withSessionId(
      client(gw, { 'x-claude-code-agent-id': 'a1b2c3' }).messages.create({
        model: 'claude-x',
        max_tokens: 512,
        system: 'You are a search agent.',
        tools,
        messages: [{ role: 'user', content: 'find the build files' }],
      }),
    );
    assert.equal(agentChat, `${MAIN}.agent-a1b2c3`);
    const info = await sessionInfo(gw, agentChat);
    assert.deepEqual(info.header.conversation, { kind: 'subagent', session: MAIN, agentId: 'a1b2c3' });
    assert.equal(info.header.parent, MAIN);
  });

  test('a compacted history continues its chat, with the compaction recorded and nothing copied', async () => {
    const c = client(gw);
    const turn1 = [
      { role: 'user' as const, content: 'please fix the build' },
      { role: 'assistant' as const, content: 'Looking at the build.' },
      { role: 'user' as const, content: 'the error is in the linker step' },
    ];
    gw.fake.script({ json: anthropicMessage('claude-x', 'The linker needs -lm.') });
    assert.equal(
      await withSessionId(
        c.messages.create({ model: 'claude-x', max_tokens: 512, system, tools, messages: turn1 }),
      ),
      MAIN,
    );

    const summary = [
      '<analysis>thinking about the conversation so far</analysis>',
      '<summary>',
      '1. Primary Request and Intent: the user asked to fix the build of the project.',
      '2. Key Technical Concepts: the linker step fails because the math library is missing.',
      '3. Pending Tasks: add -lm to the linker flags and run the build again.',
      '</summary>',
    ].join('\n');
    // The compact request: the whole history and the instruction to summarise it.
    const compactHistory = [
      ...turn1,
      { role: 'assistant' as const, content: 'The linker needs -lm.' },
      {
        role: 'user' as const,
        content: 'Your task is to create a detailed summary of the conversation so far.',
      },
    ];
    gw.fake.script({ json: anthropicMessage('claude-x', summary) });
    assert.equal(
      await withSessionId(
        c.messages.create({ model: 'claude-x', max_tokens: 2048, system, tools, messages: compactHistory }),
      ),
      MAIN,
    );

    // The next turn goes on from the summary (the analysis part left out, as Claude Code does).
    const continued =
      'This session is being continued from a previous conversation that ran out of context. ' +
      'The conversation is summarized below:\n' +
      summary.split('\n').slice(2, 5).join('\n');
    gw.fake.script({ json: anthropicMessage('claude-x', 'Adding -lm now.') });
    const next = await withSessionId(
      c.messages.create({
        model: 'claude-x',
        max_tokens: 512,
        system,
        tools,
        messages: [{ role: 'user', content: continued }],
      }),
    );
    assert.equal(next, MAIN, 'the compacted conversation continues its chat');

    const events = await sessionEvents(gw.url, MAIN);
    const [compaction] = eventsOfType(events, 'compaction');
    assert.ok(compaction, 'the compaction is recorded');
    const messages = eventsOfType(events, 'message');
    const replaced = messages.filter(
      (m) => m.seq >= compaction.replaced.fromSeq && m.seq <= compaction.replaced.toSeq,
    );
    assert.equal(replaced.length, 6, 'every earlier message is what the summary replaced');
    assert.equal(
      messages.filter((m) => m.seq > compaction.seq).length,
      2,
      'then the summary-based history and the answer',
    );
    // The history is stored once: the summary text appears in the log only as the model's answer and the new first message.
    assert.equal(
      (await chatIds(gw)).filter((id) => id.startsWith(`${MAIN}.b`)).length,
      0,
      'no branch was made for the compaction',
    );

    // The following turn is an ordinary continuation of the compacted history.
    gw.fake.script({ json: anthropicMessage('claude-x', 'Build passes.') });
    assert.equal(
      await withSessionId(
        c.messages.create({
          model: 'claude-x',
          max_tokens: 512,
          system,
          tools,
          messages: [
            { role: 'user', content: continued },
            { role: 'assistant', content: 'Adding -lm now.' },
            { role: 'user', content: 'run the build' },
          ],
        }),
      ),
      MAIN,
    );
    assert.equal((await chatIds(gw)).filter((id) => id.startsWith(`${MAIN}.b`)).length, 0);
  });

  test("Claude Code's /compact: the summary request goes to a side chat, the compacted history continues the main chat", async () => {
    const SESSION2 = '5d7e0c1a-9f00-4a51-8d2b-3c2a7e9b0f12';
    const main = `claude-code:${SESSION2}`;
    const c = new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      defaultHeaders: { 'x-claude-code-session-id': SESSION2 },
    });
    const u1 = { role: 'user' as const, content: [{ type: 'text' as const, text: 'run the build' }] };
    const a1 = {
      role: 'assistant' as const,
      content: [{ type: 'tool_use' as const, id: 'toolu_1', name: 'Bash', input: { command: 'make' } }],
    };
    const result = { type: 'tool_result' as const, tool_use_id: 'toolu_1', content: 'make: ok' };
    const u2 = { role: 'user' as const, content: [result] };
    const a2 = {
      role: 'assistant' as const,
      content: [{ type: 'text' as const, text: 'Done before compacting.' }],
    };
    gw.fake.script({
      json: { ...anthropicMessage('claude-x', ''), content: a1.content, stop_reason: 'tool_use' },
    });
    assert.equal(
      await withSessionId(
        c.messages.create({ model: 'claude-x', max_tokens: 99, system, tools, messages: [u1] }),
      ),
      main,
    );
    gw.fake.script({ json: anthropicMessage('claude-x', 'Done before compacting.') });
    assert.equal(
      await withSessionId(
        c.messages.create({ model: 'claude-x', max_tokens: 99, system, tools, messages: [u1, a1, u2] }),
      ),
      main,
    );

    // The compact request: the newest messages left out, the instruction beside the last tool result.
    const summary = [
      '<analysis>the user wants the build to run</analysis>',
      '<summary>',
      '1. Primary Request and Intent: the user asked to run the build of the project with make.',
      '2. Key Technical Concepts: the build is driven by make and it finished without errors.',
      '3. Pending Tasks: nothing is pending; wait for the next instruction of the user.',
      '</summary>',
    ].join('\n');
    gw.fake.script({ json: anthropicMessage('claude-x', summary) });
    const compactChat = await withSessionId(
      c.messages.create({
        model: 'claude-x',
        max_tokens: 99,
        system,
        tools,
        messages: [
          u1,
          a1,
          {
            role: 'user',
            content: [
              result,
              {
                type: 'text',
                text: 'CRITICAL: Respond with TEXT ONLY. Your task is to create a detailed summary of the conversation so far.',
              },
            ],
          },
        ],
      }),
    );
    assert.match(compactChat, new RegExp(`^${main.replace(/[.:-]/g, '\\$&')}\\.side-summary-[0-9a-f]{12}$`));
    const side = await sessionInfo(gw, compactChat);
    assert.deepEqual(side.header.conversation, { kind: 'side', session: main, purpose: 'summary' });
    // The side chat holds what the summary request added and the summary: not the history again.
    assert.deepEqual(
      eventsOfType(await sessionEvents(gw.url, compactChat), 'message').map((m) => m.role),
      ['user', 'model'],
    );

    // The next turn starts from the summary, then the messages kept verbatim, then the new prompt.
    const continued =
      'This session is being continued from a previous conversation that ran out of context. ' +
      'The summary below covers the earlier portion of the conversation.\n\nSummary:\n' +
      summary.split('\n').slice(2, 5).join('\n');
    gw.fake.script({ json: anthropicMessage('claude-x', 'Ready.') });
    const next = await withSessionId(
      c.messages.create({
        model: 'claude-x',
        max_tokens: 99,
        system,
        tools,
        messages: [{ role: 'user', content: continued }, a2, { role: 'user', content: 'Then go on' }],
      }),
    );
    assert.equal(next, main, 'the compacted conversation continues the main chat');
    const events = await sessionEvents(gw.url, main);
    const [compaction] = eventsOfType(events, 'compaction');
    assert.ok(compaction, 'the compaction is recorded in the main chat');
    assert.equal(
      eventsOfType(events, 'message').filter((m) => m.seq > compaction.seq).length,
      4,
      'the summary-based history (3 messages) and the answer follow it',
    );
    const ids = await chatIds(gw);
    assert.equal(ids.filter((id) => id.startsWith(`${main}.b`)).length, 0, 'no branch for the compaction');
  });

  test('a true edit still branches, and the tree shows main, side, sub-agent and branch', async () => {
    gw.fake.script({ json: anthropicMessage('claude-x', 'Fixing the tests instead.') });
    const edited = await withSessionId(
      client(gw).messages.create({
        model: 'claude-x',
        max_tokens: 512,
        system,
        tools,
        messages: [{ role: 'user', content: 'please fix the tests' }],
      }),
    );
    assert.match(edited, new RegExp(`^${MAIN.replace(/[.:-]/g, '\\$&')}\\.b[0-9a-f]{12}$`));
    const branch = await sessionInfo(gw, edited);
    assert.deepEqual(branch.header.conversation, { kind: 'branch', session: MAIN });

    const tree = (await sessionInfo(gw, MAIN)).conversations;
    assert.equal(tree.id, MAIN);
    assert.equal(tree.kind, 'main');
    const kinds = tree.children.map((n) => `${n.kind}:${n.purpose ?? n.agentId ?? ''}`).sort();
    assert.deepEqual(kinds, ['branch:', 'side:quota', 'side:structured', 'subagent:a1b2c3']);
    // Asked of a child chat, the tree is still the session's.
    assert.equal((await sessionInfo(gw, `${MAIN}.agent-a1b2c3`)).conversations.id, MAIN);
  });
});

describe('a plain client naming its chat with x-session-id is taken as it means it', () => {
  test('a one-message structured-output request with x-session-id is the main chat', async () => {
    const gw = await startGateway();
    try {
      gw.fake.script({ json: anthropicMessage('claude-x', '{"a":1}') });
      const c = new Anthropic({
        baseURL: gw.url,
        apiKey: 'k',
        maxRetries: 0,
        defaultHeaders: { 'x-session-id': 'plain-1' },
      });
      const id = await withSessionId(
        c.messages.create({
          model: 'claude-x',
          max_tokens: 1,
          messages: [{ role: 'user', content: 'json please' }],
        }),
      );
      assert.equal(id, 'plain-1');
    } finally {
      await gw.close();
    }
  });
});
