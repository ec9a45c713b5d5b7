// The conversations of one Claude Code session compact on their own (SPEC section 10): a sub-agent
// that asks for its summary after the main conversation asked for its own leaves the main
// conversation's summary recognised. Each compacted history continues its own chat, with the
// compaction recorded there; neither branches.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { anthropicMessage } from '../fake-provider/fake-bodies.ts';

const SESSION = '1111310b-7752-4d78-8aa4-033825854632';
const MAIN = `claude-code:${SESSION}`;
const SUB = `${MAIN}.agent-a84ffb45e5d28a315`;
const tools = [
  { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: {} } },
];
const ASK =
  'CRITICAL: Respond with TEXT ONLY. Your task is to create a detailed summary of the conversation so far.';

type Msg = { role: 'user' | 'assistant'; content: unknown };

const toolUse = (id: string) => [{ type: 'tool_use', id, name: 'Bash', input: { command: id } }];
const summary = (what: string): string =>
  [
    '<analysis>what was done</analysis>',
    '<summary>',
    `1. Primary Request and Intent: the user asked to ${what} and nothing else at all.`,
    `2. Key Technical Concepts: ${what} is driven by make and it finished without errors.`,
    `3. Pending Tasks: nothing is pending after ${what}; wait for the next instruction.`,
    '</summary>',
  ].join('\n');

describe('compactions of a session interleave', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  /** One call of the session; the chat it was logged in. */
  async function send(system: string, messages: Msg[], answer: object, agent?: string): Promise<string> {
    gw.fake.script({ json: answer as Record<string, unknown> });
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-ant-test',
        'anthropic-version': '2023-06-01',
        'x-claude-code-session-id': SESSION,
        ...(agent ? { 'x-claude-code-agent-id': agent } : {}),
      },
      body: JSON.stringify({ model: 'claude-x', max_tokens: 99, system, tools, messages }),
    });
    assert.equal(res.status, 200, await res.text());
    return res.headers.get('x-session-id')!;
  }

  /**
   * A conversation that runs a tool, answers, and asks for its summary (/compact); the history of
   * the turn after it, built from that summary.
   */
  async function untilCompacted(system: string, what: string, agent?: string): Promise<Msg[]> {
    const id = `toolu_${what.replace(/\W/g, '')}`;
    const prompt: Msg = { role: 'user', content: [{ type: 'text', text: `please ${what}` }] };
    const use: Msg = { role: 'assistant', content: toolUse(id) };
    const result = { type: 'tool_result', tool_use_id: id, content: 'ok' };
    const chat = agent ? SUB : MAIN;
    const toolAnswer = { ...anthropicMessage('claude-x', ''), content: toolUse(id), stop_reason: 'tool_use' };
    assert.equal(await send(system, [prompt], toolAnswer, agent), chat);
    const done = anthropicMessage('claude-x', `Done: ${what}.`);
    assert.equal(await send(system, [prompt, use, { role: 'user', content: [result] }], done, agent), chat);
    const side = await send(
      system,
      [prompt, use, { role: 'user', content: [result, { type: 'text', text: ASK }] }],
      anthropicMessage('claude-x', summary(what)),
      agent,
    );
    assert.match(side, /\.side-summary-[0-9a-f]{12}$/);
    const continued =
      'This session is being continued from a previous conversation that ran out of context. ' +
      'The summary below covers the earlier portion of the conversation.\n\nSummary:\n' +
      summary(what).split('\n').slice(2, 5).join('\n');
    return [
      { role: 'user', content: continued },
      { role: 'assistant', content: [{ type: 'text', text: `Done: ${what}.` }] },
      { role: 'user', content: 'go on' },
    ];
  }

  test('a sub-agent compacting after the main conversation asked for its summary', async () => {
    const main = await untilCompacted('You are Claude Code.', 'run the build');
    const sub = await untilCompacted('You are a sub-agent.', 'run the linter', 'a84ffb45e5d28a315');
    const ready = anthropicMessage('claude-x', 'Ready.');
    assert.equal(await send('You are Claude Code.', main, ready), MAIN, 'the main conversation goes on');
    assert.equal(
      await send('You are a sub-agent.', sub, ready, 'a84ffb45e5d28a315'),
      SUB,
      "the sub-agent's conversation goes on",
    );
    for (const chat of [MAIN, SUB]) {
      assert.equal(eventsOfType(await sessionEvents(gw.url, chat), 'compaction').length, 1, chat);
    }
    const res = await fetch(`${gw.url}/v1/sessions?limit=500`);
    const ids = ((await res.json()) as { data: Array<{ id: string }> }).data.map((s) => s.id);
    assert.deepEqual(
      ids.filter((id) => /\.b[0-9a-f]{12}$/.test(id)),
      [],
      'no branch',
    );
  });
});
