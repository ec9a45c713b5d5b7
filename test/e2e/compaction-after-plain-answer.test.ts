// Claude Code's /compact after a plain answer (no tool call in the last turn), as Claude Code
// 2.1.332 sends it: the whole history, then the instruction as a user message of its own. The
// summary request is a side request of the session (SPEC section 10): logged in a side chat, never
// in the main chat; the next turn, a single user message built from the summary, continues the main
// chat with the compaction recorded. A user who asks for a summary in their own words is not.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { anthropicMessage } from '../fake-provider/fake-bodies.ts';

const tools = [
  { name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: {} } },
];
const INSTRUCTION =
  'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n\n' +
  'Your task is to create a detailed summary of the conversation so far, paying close attention to the ' +
  "user's explicit requests and your previous actions.";
const summary = [
  '<analysis>a short conversation</analysis>',
  '<summary>',
  '1. Primary Request and Intent: the user asked about the weather and then about the news today.',
  '2. Key Technical Concepts: nothing technical was discussed in this conversation at all.',
  '3. Pending Tasks: nothing is pending; wait for the next instruction of the user.',
  '</summary>',
].join('\n');

type Msg = { role: 'user' | 'assistant'; content: unknown };
const text = (t: string) => ({ type: 'text', text: t });

describe('/compact after a plain answer', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  /** One call of session `session`; the chat it was logged in. */
  async function send(session: string, messages: Msg[], answer: string): Promise<string> {
    gw.fake.script({ json: anthropicMessage('claude-x', answer) });
    const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': 'sk-ant-test',
        'anthropic-version': '2023-06-01',
        'x-claude-code-session-id': session,
      },
      body: JSON.stringify({
        model: 'claude-x',
        max_tokens: 99,
        system: 'You are Claude Code.',
        tools,
        messages,
      }),
    });
    assert.equal(res.status, 200, await res.text());
    return res.headers.get('x-session-id')!;
  }
  const texts = async (chat: string) =>
    eventsOfType(await sessionEvents(gw.url, chat), 'message').map((m) =>
      m.content.map((p) => ('text' in p ? p.text : '')).join(''),
    );

  test('the summary request goes to a side chat; the next turn continues the main chat', async () => {
    const session = '4444310b-7752-4d78-8aa4-033825854632';
    const main = `claude-code:${session}`;
    const weather: Msg[] = [
      { role: 'user', content: [text('weather?')] },
      { role: 'assistant', content: [text('Sunny.')] },
    ];
    assert.equal(await send(session, weather.slice(0, 1), 'Sunny.'), main);
    const history: Msg[] = [...weather, { role: 'user', content: [text('news?')] }];
    assert.equal(await send(session, history, 'Quiet.'), main);
    const asked: Msg[] = [
      ...history,
      { role: 'assistant', content: [text('Quiet.')] },
      { role: 'user', content: INSTRUCTION },
    ];
    const side = await send(session, asked, summary);
    assert.match(side, /\.side-summary-[0-9a-f]{12}$/, 'the summary request is a side request');
    assert.deepEqual(
      await texts(side),
      [INSTRUCTION, summary],
      'its side chat holds the ask and the summary',
    );
    assert.deepEqual(
      await texts(main),
      ['weather?', 'Sunny.', 'news?', 'Quiet.'],
      'the main chat holds neither',
    );

    // The next turn: one user message, the summary and the new prompt.
    const continued =
      'This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n' +
      summary.split('\n').slice(2, 5).join('\n');
    const next = await send(
      session,
      [{ role: 'user', content: [text(continued), text('Then go on')] }],
      'Ok.',
    );
    assert.equal(next, main, 'the compacted conversation continues the main chat');
    assert.equal(eventsOfType(await sessionEvents(gw.url, main), 'compaction').length, 1);
  });

  test('a user asking for a summary in their own words stays in the main chat', async () => {
    const session = '5555310b-7752-4d78-8aa4-033825854632';
    const main = `claude-code:${session}`;
    const history: Msg[] = [{ role: 'user', content: [text('weather?')] }];
    assert.equal(await send(session, history, 'Sunny.'), main);
    const ask: Msg[] = [
      ...history,
      { role: 'assistant', content: [text('Sunny.')] },
      { role: 'user', content: 'Please write a detailed summary of the conversation so far.' },
    ];
    assert.equal(await send(session, ask, 'We talked about the weather.'), main);
  });
});
