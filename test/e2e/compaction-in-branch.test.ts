// Claude Code's /compact in a conversation the user rewound (an edited earlier message, logged in a
// branch of the session's chat): the compacted history continues that branch, where the
// conversation it summarises is logged, not the session's main chat.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { anthropicMessage } from '../fake-provider/fake-bodies.ts';

const SESSION = '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const MAIN = `claude-code:${SESSION}`;
const system = 'You are Claude Code, an agent for software engineering.';
const tools = [
  { name: 'Bash', description: 'Run a command', input_schema: { type: 'object' as const, properties: {} } },
];

type Param = Anthropic.MessageParam;
const prompt = (text: string): Param => ({ role: 'user', content: [{ type: 'text', text }] });
const toolUse = (id: string, command: string): Param => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id, name: 'Bash', input: { command } }],
});
const result = (id: string, out: string): Anthropic.ToolResultBlockParam => ({
  type: 'tool_result',
  tool_use_id: id,
  content: out,
});
const said = (text: string): Param => ({ role: 'assistant', content: [{ type: 'text', text }] });

describe('a compaction of a rewound conversation', () => {
  let gw: TestGateway;
  let c: Anthropic;
  before(async () => {
    gw = await startGateway();
    c = new Anthropic({
      baseURL: gw.url,
      apiKey: 'sk-ant-test',
      maxRetries: 0,
      defaultHeaders: { 'x-claude-code-session-id': SESSION },
    });
  });
  after(async () => {
    await gw?.close();
  });

  /** One call of the session; the chat it was logged in. */
  async function send(messages: Param[], answer: Record<string, unknown>): Promise<string> {
    gw.fake.script({ json: answer });
    const { response } = await c.messages
      .create({ model: 'claude-x', max_tokens: 99, system, tools, messages })
      .withResponse();
    return response.headers.get('x-session-id')!;
  }
  const toolAnswer = (m: Param) => ({
    ...anthropicMessage('claude-x', ''),
    content: m.content,
    stop_reason: 'tool_use',
  });

  test('continues the branch the summarised conversation is logged in', async () => {
    // The conversation as first typed, in the session's chat.
    const u1 = prompt('run the build');
    const a1 = toolUse('toolu_1', 'make');
    assert.equal(await send([u1], toolAnswer(a1)), MAIN);
    assert.equal(
      await send(
        [u1, a1, { role: 'user', content: [result('toolu_1', 'make: ok')] }],
        anthropicMessage('claude-x', 'Built.'),
      ),
      MAIN,
    );

    // The user rewinds to the first prompt and asks for something else: a branch.
    const e1 = prompt('run the tests');
    const b1 = toolUse('toolu_2', 'make test');
    const branch = await send([e1], toolAnswer(b1));
    assert.match(branch, new RegExp(`^${MAIN.replace(/[.:-]/g, '\\$&')}\\.b[0-9a-f]{12}$`));
    const testsRun = { role: 'user' as const, content: [result('toolu_2', 'tests: 12 passed')] };
    const b2 = said('Done before compacting.');
    assert.equal(
      await send([e1, b1, testsRun], anthropicMessage('claude-x', 'Done before compacting.')),
      branch,
    );

    // /compact in the rewound conversation: a side request of the session.
    const summary = [
      '<analysis>the user wants the tests to run</analysis>',
      '<summary>',
      '1. Primary Request and Intent: the user asked to run the test suite of the project with make.',
      '2. Key Technical Concepts: the tests are driven by make test and all twelve of them passed.',
      '3. Pending Tasks: nothing is pending; wait for the next instruction of the user.',
      '</summary>',
    ].join('\n');
    const compact = await send(
      [
        e1,
        b1,
        {
          role: 'user',
          content: [
            result('toolu_2', 'tests: 12 passed'),
            {
              type: 'text',
              text: 'CRITICAL: Respond with TEXT ONLY. Your task is to create a detailed summary of the conversation so far.',
            },
          ],
        },
      ],
      anthropicMessage('claude-x', summary),
    );
    assert.match(compact, /\.side-summary-[0-9a-f]{12}$/);
    const side = (await (await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(compact)}`)).json()) as {
      header: { parent?: string; conversation?: unknown };
      conversations: { id: string; children: Array<{ id: string; children: Array<{ id: string }> }> };
    };
    assert.equal(side.header.parent, branch, 'the summary names the conversation it summarises');
    assert.deepEqual(side.header.conversation, { kind: 'side', session: MAIN, purpose: 'summary' });
    const underBranch = side.conversations.children.find((n) => n.id === branch)?.children.map((n) => n.id);
    assert.deepEqual(underBranch, [compact], "in the session's tree the summary hangs under the branch");

    // The next turn starts from that summary: it continues the branch.
    const continued =
      'This session is being continued from a previous conversation that ran out of context. ' +
      'The summary below covers the earlier portion of the conversation.\n\nSummary:\n' +
      summary.split('\n').slice(2, 5).join('\n');
    const next = await send(
      [{ role: 'user', content: continued }, b2, prompt('Then go on')],
      anthropicMessage('claude-x', 'Ready.'),
    );
    assert.equal(next, branch, 'the compacted conversation continues the branch it summarises');
    const goOn = [
      { role: 'user' as const, content: continued },
      b2,
      prompt('Then go on'),
      said('Ready.'),
      prompt('And finish'),
    ];
    assert.equal(await send(goOn, anthropicMessage('claude-x', 'Finished.')), branch, 'and goes on there');
    const [compaction] = eventsOfType(await sessionEvents(gw.url, branch), 'compaction');
    assert.ok(compaction, 'the compaction is recorded in the branch');
    assert.deepEqual(
      eventsOfType(await sessionEvents(gw.url, MAIN), 'compaction'),
      [],
      "the session's chat, whose conversation was not summarised, records no compaction",
    );
  });
});
