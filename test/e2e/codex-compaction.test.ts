// Codex's compaction through the gateway (SPEC section 10), shaped as Codex 0.171 sends it to a
// custom provider (recorded in test/clients/RECORDED.md): the compaction request is a side request
// (`x-codex-turn-metadata` `request_kind: "compaction"`), and the next turn's history keeps the
// initial context and the user's earlier messages, then a user message carrying the summary, then
// the new prompt. That history continues the main chat with the compaction recorded; it is no edit.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';
import { openaiCompletion } from '../fake-provider/fake-bodies.ts';

const SESSION = '019a0000-0000-7000-8000-0000c0c0a001';
const MAIN = `session:${SESSION}`;

type Item = Record<string, unknown>;
const user = (text: string): Item => ({
  type: 'message',
  role: 'user',
  content: [{ type: 'input_text', text }],
});
const developer: Item = {
  type: 'message',
  role: 'developer',
  content: [{ type: 'input_text', text: 'You are a coding agent running in the Codex CLI.' }],
};
const environment = user(
  '<environment_context>\n  <cwd>/project</cwd>\n  <shell>bash</shell>\n</environment_context>',
);
const COMPACT_PROMPT =
  'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.';
const PREFIX =
  'Another language model started to solve this problem and produced a summary of its thinking process. ' +
  'Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:\n';

const summary = (n: number): string =>
  [
    `Summary ${n}:`,
    `- The user asked to build the project; the build ran with make and finished (checkpoint ${n}).`,
    `- Tests were run afterwards and all of them passed without any failure (checkpoint ${n}).`,
    `- Nothing is pending; the next step is whatever the user asks for next (checkpoint ${n}).`,
  ].join('\n');

type Reply = Parameters<TestGateway['fake']['script']>[0];

/**
 * A Codex-shaped client of session `session` (the official SDK, Codex's session headers): a call of
 * request kind `kind` with `input`, the provider answering `reply`; the chat it went to, its status
 * and the provider's output items.
 */
function codexSession(gw: TestGateway, session: string) {
  const c = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: 'sk-test',
    maxRetries: 0,
    defaultHeaders: { 'session-id': session, 'thread-id': session },
  });
  return async (kind: string, input: Item[], reply: Reply) => {
    gw.fake.script(reply);
    const metadata = { session_id: session, thread_id: session, turn_id: `t-${kind}`, request_kind: kind };
    try {
      const { data, response } = await c.responses
        .create(
          { model: 'gpt-5.1-codex', store: false, input: input as unknown as OpenAI.Responses.ResponseInput },
          { headers: { 'x-codex-turn-metadata': JSON.stringify(metadata) } },
        )
        .withResponse();
      const chat = response.headers.get('x-session-id')!;
      return { status: response.status, chat, output: data.output as unknown as Item[] };
    } catch (err) {
      if (!(err instanceof OpenAI.APIError)) throw err;
      return { status: err.status ?? 0, chat: err.headers?.get('x-session-id') ?? '', output: [] };
    }
  };
}

const answer = (text: string): Item => responsesMessage(text, `msg_${text.length}`);
const reply = (text: string): Reply => ({ responses: { output: [answer(text)] } });
const branchOf = (main: string) => new RegExp(`^${main.replace(/[.:-]/g, '\\$&')}\\.b[0-9a-f]+$`);

async function chatIds(gw: TestGateway): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/sessions?limit=500`);
  const body = (await res.json()) as { data: Array<{ id: string }> };
  return body.data.map((s) => s.id).sort();
}

describe("Codex's compaction continues the main chat", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  test('two compactions in a row: each compacted history goes on in the main chat, no branch', async () => {
    const ask = codexSession(gw, SESSION);
    const call = async (kind: string, input: Item[], text: string) =>
      (await ask(kind, input, reply(text))).chat;
    const start = user('Build the project');
    assert.equal(await call('turn', [developer, environment, start], 'Build done.'), MAIN);

    // The compaction request: the whole history and the compaction prompt, a side request.
    const side = await call(
      'compaction',
      [developer, environment, start, answer('Build done.'), user(COMPACT_PROMPT)],
      summary(1),
    );
    assert.match(side, /^session:019a0000-0000-7000-8000-0000c0c0a001\.side-compaction-[0-9a-f]{12}$/);

    // The next turn: the initial context and the user's message kept, then the summary, then the prompt.
    const goOn = user('Now run the tests');
    const first = [developer, environment, start, user(PREFIX + summary(1)), goOn];
    assert.equal(await call('turn', first, 'Tests pass.'), MAIN, 'the compacted history continues');

    // A second compaction: Codex keeps the user's messages but not the earlier summary.
    await call('compaction', [...first, answer('Tests pass.'), user(COMPACT_PROMPT)], summary(2));
    const second = [developer, environment, start, goOn, user(PREFIX + summary(2)), user('Ship it')];
    assert.equal(await call('turn', second, 'Shipped.'), MAIN, 'the second compacted history continues');

    const events = await sessionEvents(gw.url, MAIN);
    const compactions = eventsOfType(events, 'compaction');
    assert.equal(compactions.length, 2, 'both compactions are recorded in the main chat');
    const messages = eventsOfType(events, 'message');
    const texts = messages.map((m) => m.content.map((p) => (p.kind === 'text' ? p.text : '')).join(''));
    assert.equal(texts.filter((t) => t === 'Build done.').length, 1, 'the first answer is logged once');
    assert.equal(texts.at(-1), 'Shipped.');
    // What each compaction replaced: from the first message the new history does not share.
    const [c1, c2] = compactions;
    const bySeq = new Map(messages.map((m, i) => [m.seq, texts[i]]));
    assert.equal(bySeq.get(c1!.replaced.fromSeq), 'Build done.');
    assert.ok(
      bySeq.get(c2!.replaced.fromSeq)?.startsWith(PREFIX),
      'the second replaced the first summary on',
    );
    assert.equal(c2!.messages, 3, 'the kept user message, the summary and the new prompt follow it');

    const ids = await chatIds(gw);
    assert.deepEqual(
      ids.filter((id) => id.startsWith(`${MAIN}.b`)),
      [],
      `no branch chat for a compaction: ${ids.join(', ')}`,
    );
  });

  test("Codex's remote compaction (OpenAI's opaque compaction item) continues the main chat", async () => {
    const session = '019a0000-0000-7000-8000-0000c0c0a003';
    const main = `session:${session}`;
    const ask = codexSession(gw, session);
    const itemReply = (item: Item): Reply => ({ responses: { output: [item] } });
    const start = user('Build the project');
    await ask('turn', [developer, environment, start], reply('Build done.'));
    // Remote compaction: the history and a trigger; the provider answers one opaque compaction item.
    const compaction = { id: 'cmp_1', type: 'compaction', encrypted_content: 'gAAAA-compacted-history' };
    const compacted = await ask(
      'compaction',
      [developer, environment, start, answer('Build done.'), { type: 'compaction_trigger' }],
      itemReply(compaction),
    );
    assert.match(compacted.chat, /\.side-compaction-[0-9a-f]{12}$/);
    // The next turn: the initial context, the user's message, the item as received, the new prompt.
    const next = await ask(
      'turn',
      [developer, environment, start, ...compacted.output, user('Now run the tests')],
      reply('Tests pass.'),
    );
    assert.equal(next.chat, main, 'the compacted history continues the main chat');
    const events = await sessionEvents(gw.url, main);
    assert.equal(eventsOfType(events, 'compaction').length, 1, 'the compaction is recorded');
    // A second remote compaction: the user's messages kept, the earlier item replaced by the new one.
    const goOn = user('Now run the tests');
    const h1 = [developer, environment, start, ...compacted.output, goOn, answer('Tests pass.')];
    const again = await ask(
      'compaction',
      [...h1, { type: 'compaction_trigger' }],
      itemReply({ id: 'cmp_2', type: 'compaction', encrypted_content: 'gAAAA-compacted-again' }),
    );
    const third = await ask(
      'turn',
      [developer, environment, start, goOn, ...again.output, user('Ship it')],
      reply('Shipped.'),
    );
    assert.equal(third.chat, main, 'the second compacted history continues the main chat too');
    assert.equal(eventsOfType(await sessionEvents(gw.url, main), 'compaction').length, 2);
    const ids = await chatIds(gw);
    assert.deepEqual(
      ids.filter((id) => id.startsWith(`${main}.b`)),
      [],
    );
    // Another opaque item than the provider's answer is an edit: it branches.
    const edited = await ask(
      'turn',
      [developer, environment, start, { ...compaction, encrypted_content: 'gAAAA-other' }, user('Go')],
      reply('Edited.'),
    );
    assert.match(edited.chat, branchOf(main));
  });

  test('a history that carries no summary still branches', async () => {
    const session = '019a0000-0000-7000-8000-0000c0c0a002';
    const ask = codexSession(gw, session);
    const start = user('Build the project');
    assert.equal(
      (await ask('turn', [developer, environment, start], reply('Build done.'))).chat,
      `session:${session}`,
    );
    await ask(
      'compaction',
      [developer, environment, start, answer('Build done.'), user(COMPACT_PROMPT)],
      reply(summary(3)),
    );
    // An edited history whose new user message is not built from the summary.
    const edited = [
      developer,
      environment,
      start,
      user('Forget that: the summary is not used here, and this is a plain edit of the history'),
      user('Go on'),
    ];
    const { chat } = await ask('turn', edited, reply('Edited.'));
    assert.match(chat, branchOf(`session:${session}`), 'an edit that carries no summary branches');
  });
});

describe('an edit that carries no summary of its own is not taken for a compaction', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  const ask = (session: string, kind: string, input: Item[], provider: Reply) =>
    codexSession(gw, session)(kind, input, provider);

  test('a compaction request that failed leaves no summary: a later edit branches', async () => {
    const session = '019a0000-0000-7000-8000-0000c0c0a0f1';
    const main = `session:${session}`;
    const start = user('Build the project');
    const goOn = user('Now run the tests');
    await ask(session, 'turn', [developer, environment, start], reply('Build done.'));
    await ask(
      session,
      'turn',
      [developer, environment, start, answer('Build done.'), goOn],
      reply('Tests pass.'),
    );
    // The compaction request is refused: its side chat holds only the history the client sent.
    const history = [developer, environment, start, answer('Build done.'), goOn, answer('Tests pass.')];
    const refused = await ask(session, 'compaction', [...history, user(COMPACT_PROMPT)], {
      status: 400,
      json: {
        error: {
          message: 'Your input exceeds the context window of this model.',
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      },
    });
    assert.equal(refused.status, 400);
    // An early item edited, the rest kept: an edit, whatever the side chat holds.
    const edited = [
      developer,
      user('<environment_context>\n  <cwd>/other</cwd>\n</environment_context>'),
      ...history.slice(2),
    ];
    assert.match(
      (await ask(session, 'turn', [...edited, user('Ship it')], reply('Shipped.'))).chat,
      branchOf(main),
    );
    assert.equal(eventsOfType(await sessionEvents(gw.url, main), 'compaction').length, 0);
  });

  test("an edited first message, then the model's answer quoted in a new message, branches", async () => {
    const chat = 'quote-edit-1';
    const said = 'The deployment failed because the database migration 0042 timed out after 30 seconds.';
    const call = async (messages: unknown[], text: string) => {
      gw.fake.script({ json: openaiCompletion('gpt-4o', text) });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-test',
          'x-session-id': chat,
        },
        body: JSON.stringify({ model: 'gpt-4o', messages }),
      });
      await res.text();
      return res.headers.get('x-session-id')!;
    };
    assert.equal(
      await call([{ role: 'user', content: 'Why did the deploy fail? (context v1)' }], said),
      chat,
    );
    const second = await call(
      [
        { role: 'user', content: 'Why did the deploy fail? (context v2)' },
        { role: 'assistant', content: said },
        { role: 'user', content: `You said: "${said}" How do I raise that timeout?` },
      ],
      'Set MIGRATION_TIMEOUT.',
    );
    assert.match(second, branchOf(chat));
    assert.equal(eventsOfType(await sessionEvents(gw.url, chat), 'compaction').length, 0);
  });

  test('after a remote compaction, an edit of an item before the kept compaction item branches', async () => {
    const session = '019a0000-0000-7000-8000-0000c0c0a0f2';
    const main = `session:${session}`;
    const start = user('Build the project');
    await ask(session, 'turn', [developer, environment, start], reply('Build done.'));
    const item = { id: 'cmp_f2', type: 'compaction', encrypted_content: 'gAAAA-compacted' };
    const c = await ask(
      session,
      'compaction',
      [developer, environment, start, answer('Build done.'), { type: 'compaction_trigger' }],
      { responses: { output: [item] } },
    );
    const h1 = [developer, environment, start, ...c.output, user('Now run the tests')];
    assert.equal((await ask(session, 'turn', h1, reply('Tests pass.'))).chat, main);
    const h2 = [...h1, answer('Tests pass.'), user('Deploy')];
    assert.equal((await ask(session, 'turn', h2, reply('Deployed.'))).chat, main);
    const other = user('<environment_context>\n  <cwd>/elsewhere</cwd>\n</environment_context>');
    const h3 = [developer, other, ...h2.slice(2), answer('Deployed.'), user('Check logs')];
    assert.match((await ask(session, 'turn', h3, reply('Logs ok.'))).chat, branchOf(main));
    assert.equal(
      eventsOfType(await sessionEvents(gw.url, main), 'compaction').length,
      1,
      'only the real one',
    );
  });
});
