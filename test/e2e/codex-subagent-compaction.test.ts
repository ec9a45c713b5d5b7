// A Codex sub-agent's compaction (SPEC section 10), shaped as Codex 0.171 sends it
// (test/clients/RECORDED.md): the sub-agent's thread (its own thread-id, the session's session-id)
// asks for a compaction with `request_kind: "compaction"`. That request is a side request of the
// sub-agent's chat, as the main thread's is of the main chat: logged in a side chat of the session
// whose parent is the sub-agent's chat, apart from the main thread's compaction (the sub-agent starts
// from the same context), and the sub-agent's next turn, built from the summary, continues the
// sub-agent's chat with the compaction recorded, not a branch of it. Both a summary in text and
// OpenAI's opaque compaction item (remote compaction), and a `POST /v1/responses/compact` with the
// sub-agent thread's headers, which the compaction endpoint places the same way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';

const S = '019a0000-0000-7000-8000-00000000c5a1';
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
const COMPACT_PROMPT =
  'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.';
const PREFIX =
  'Another language model started to solve this problem and produced a summary of its thinking process. ' +
  'Here is the summary produced by the other language model, use the information in this summary to assist with your own analysis:\n';
const summary = (who: string): string =>
  [
    `Summary of ${who}:`,
    `- ${who} was asked to look at the files of the project and listed every one of them in turn.`,
    `- ${who} found that the build script and the test runner both live in the scripts folder.`,
    `- Nothing is pending for ${who}; the next step is whatever its parent asks for next.`,
  ].join('\n');
const answer = (text: string): Item => responsesMessage(text, `msg_${text.length}`);

/**
 * The headers Codex sends on a call of session `session`'s thread `thread` (the session's own thread
 * is the main one) with request kind `kind`; without the `thread-id` header when `threadHeader` is
 * false (the turn metadata alone names the thread).
 */
function codexHeaders(
  session: string,
  thread: string,
  kind: string,
  threadHeader = true,
): Record<string, string> {
  const md = {
    session_id: session,
    thread_id: thread,
    turn_id: `t-${kind}`,
    request_kind: kind,
    ...(thread === session
      ? { thread_source: 'user' }
      : { thread_source: 'subagent', subagent_kind: 'thread_spawn', parent_thread_id: session }),
  };
  return {
    'content-type': 'application/json',
    authorization: 'Bearer sk',
    'session-id': session,
    ...(threadHeader ? { 'thread-id': thread } : {}),
    'x-codex-turn-metadata': JSON.stringify(md),
  };
}

/** A `POST` of `input` to `path` with `headers`: the chat it was logged in and the output. */
async function post(gw: TestGateway, path: string, headers: Record<string, string>, input: Item[]) {
  const key = headers['session-id'];
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ model: 'gpt-5.1-codex', store: false, prompt_cache_key: key, input }),
  });
  const body = (await res.json()) as { output: Item[] };
  assert.equal(res.status, 200, JSON.stringify(body));
  return { chat: res.headers.get('x-session-id')!, output: body.output };
}

/** A `POST /v1/responses` of thread `thread` with request kind `kind`, answered with `output`. */
async function call(
  gw: TestGateway,
  thread: string,
  kind: string,
  input: Item[],
  output: Item[],
  session = S,
) {
  gw.fake.script({ responses: { output } });
  return post(gw, '/v1/responses', codexHeaders(session, thread, kind), input);
}

interface Node {
  id: string;
  kind: string;
  purpose?: string;
  children: Node[];
}
async function session(gw: TestGateway, id: string) {
  const res = await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(id)}`);
  assert.equal(res.status, 200);
  return (await res.json()) as {
    header: { parent?: string; conversation?: { kind: string; purpose?: string } };
    conversations: Node;
  };
}
async function ids(gw: TestGateway): Promise<string[]> {
  const body = (await (await fetch(`${gw.url}/v1/sessions?limit=500`)).json()) as {
    data: Array<{ id: string }>;
  };
  return body.data.map((s) => s.id).sort();
}
const texts = async (gw: TestGateway, id: string) =>
  eventsOfType(await sessionEvents(gw.url, id), 'message').map((m) =>
    m.content.map((p) => (p.kind === 'text' ? p.text : '')).join(''),
  );
const SIDE = /^session:019a0000-0000-7000-8000-00000000c5a1\.side-compaction-[0-9a-f]{12}$/;

describe("a Codex sub-agent's compaction", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  test("is a side chat of the sub-agent's chat, and its next turn continues the sub-agent", async () => {
    const T = '019a0000-0000-7000-8000-00000000c5b1';
    const AGENT = `${MAIN}.agent-${T}`;
    const start = user('Run the plan');
    assert.equal((await call(gw, S, 'turn', [dev, env, start], [answer('Plan started.')])).chat, MAIN);
    // The main thread compacts first: its side chat names the main chat.
    const mainSide = await call(
      gw,
      S,
      'compaction',
      [dev, env, start, answer('Plan started.'), user(COMPACT_PROMPT)],
      [answer(summary('the main thread'))],
    );
    assert.match(mainSide.chat, SIDE);

    const task = user('Sub task: look at the files');
    assert.equal((await call(gw, T, 'turn', [dev, env, task], [answer('Looked at them.')])).chat, AGENT);
    const side = await call(
      gw,
      T,
      'compaction',
      [dev, env, task, answer('Looked at them.'), user(COMPACT_PROMPT)],
      [answer(summary('the sub-agent'))],
    );
    assert.match(side.chat, SIDE, "the sub-agent's compaction is a side chat, not the sub-agent's own");
    assert.notEqual(side.chat, mainSide.chat, "apart from the main thread's compaction");
    const sideInfo = await session(gw, side.chat);
    assert.equal(sideInfo.header.parent, AGENT, "its parent is the sub-agent's chat");
    assert.equal(sideInfo.header.conversation?.kind, 'side');
    assert.equal(sideInfo.header.conversation?.purpose, 'compaction');
    assert.equal((await session(gw, mainSide.chat)).header.parent, MAIN);

    // The sub-agent's next turn: the context and its task kept, then the summary, then more work.
    const goOn = user('Now read the build script');
    const compacted = [dev, env, task, user(PREFIX + summary('the sub-agent')), goOn];
    const next = await call(gw, T, 'turn', compacted, [answer('Read it.')]);
    assert.equal(next.chat, AGENT, 'the compacted history continues the sub-agent chat');
    const events = await sessionEvents(gw.url, AGENT);
    assert.equal(eventsOfType(events, 'compaction').length, 1, 'the compaction is recorded there');
    const logged = await texts(gw, AGENT);
    assert.ok(!logged.includes(COMPACT_PROMPT), 'the compaction request is not in the sub-agent chat');
    assert.equal(logged.at(-1), 'Read it.');
    assert.equal(eventsOfType(await sessionEvents(gw.url, MAIN), 'compaction').length, 0);

    const tree = (await session(gw, MAIN)).conversations;
    const agentNode = tree.children.find((n) => n.id === AGENT);
    assert.deepEqual(
      agentNode?.children.map((n) => [n.id, n.kind, n.purpose]),
      [[side.chat, 'side', 'compaction']],
    );
    assert.deepEqual(
      (await ids(gw)).filter((id) => /\.b[0-9a-f]+$/.test(id)),
      [],
      'no branch',
    );
  });

  test("a sub-agent's remote compaction (the opaque item) continues the sub-agent chat", async () => {
    const T = '019a0000-0000-7000-8000-00000000c5b2';
    const AGENT = `${MAIN}.agent-${T}`;
    const task = user('Sub task: check the tests');
    assert.equal((await call(gw, T, 'turn', [dev, env, task], [answer('Checked.')])).chat, AGENT);
    const item = { id: 'cmp_sub', type: 'compaction', encrypted_content: 'gAAAA-sub-agent-history' };
    const side = await call(
      gw,
      T,
      'compaction',
      [dev, env, task, answer('Checked.'), { type: 'compaction_trigger' }],
      [item],
    );
    assert.match(side.chat, SIDE);
    assert.equal((await session(gw, side.chat)).header.parent, AGENT);
    const next = await call(
      gw,
      T,
      'turn',
      [dev, env, task, ...side.output, user('Run them again')],
      [answer('All pass.')],
    );
    assert.equal(next.chat, AGENT);
    assert.equal(eventsOfType(await sessionEvents(gw.url, AGENT), 'compaction').length, 1);
    assert.deepEqual(
      (await ids(gw)).filter((id) => id.startsWith(`${AGENT}.b`)),
      [],
    );
  });

  // `POST /v1/responses/compact` with a thread's headers (the provider answers with the user
  // messages and one opaque `compaction` item): placed as that thread's inline compaction is, the
  // sub-agent's before or after the main thread's. A session of its own for each.
  const variants = [
    { name: 'the thread-id header', threadHeader: true, mainFirst: false, n: 3 },
    { name: 'the turn metadata alone', threadHeader: false, mainFirst: true, n: 4 },
  ];
  for (const { name, threadHeader, mainFirst, n } of variants) {
    test(`a sub-agent's POST /v1/responses/compact (${name}) is a side chat of the sub-agent's chat`, async () => {
      const S2 = `019a0000-0000-7000-8000-00000000c5a${n}`;
      const T = `019a0000-0000-7000-8000-00000000c5b${n}`;
      const MAIN2 = `session:${S2}`;
      const AGENT = `${MAIN2}.agent-${T}`;
      const SIDE2 = new RegExp(`^session:${S2}\\.side-compaction-[0-9a-f]{12}$`);
      const start = user('Run the plan');
      assert.equal((await call(gw, S2, 'turn', [dev, env, start], [answer('Started.')], S2)).chat, MAIN2);
      const task = user('Sub task: list the scripts');
      assert.equal((await call(gw, T, 'turn', [dev, env, task], [answer('Listed.')], S2)).chat, AGENT);

      const compact = (thread: string, history: Item[]) =>
        post(gw, '/v1/responses/compact', codexHeaders(S2, thread, 'compaction', threadHeader), history);
      const compactMain = () => compact(S2, [dev, env, start, answer('Started.')]);
      const mainFirstSide = mainFirst ? await compactMain() : undefined;
      const side = await compact(T, [dev, env, task, answer('Listed.')]);
      assert.match(side.chat, SIDE2, "the sub-agent's compaction is a side chat, not the sub-agent's own");
      const sideInfo = await session(gw, side.chat);
      assert.equal(sideInfo.header.parent, AGENT, "its parent is the sub-agent's chat");
      assert.equal(sideInfo.header.conversation?.purpose, 'compaction');
      assert.equal(side.output.at(-1)?.type, 'compaction');
      // The main thread's compaction still names the main chat, apart from the sub-agent's.
      const mainSide = mainFirstSide ?? (await compactMain());
      assert.match(mainSide.chat, SIDE2);
      assert.notEqual(side.chat, mainSide.chat, "apart from the main thread's compaction");
      assert.equal((await session(gw, mainSide.chat)).header.parent, MAIN2);

      // The sub-agent's next turn: the initial context, then the compact output as received.
      const next = await call(gw, T, 'turn', [dev, ...side.output, user('Run them')], [answer('Ran.')], S2);
      assert.equal(next.chat, AGENT, 'the compacted history continues the sub-agent chat');
      assert.equal(eventsOfType(await sessionEvents(gw.url, AGENT), 'compaction').length, 1);
      assert.equal((await texts(gw, AGENT)).at(-1), 'Ran.');
      assert.deepEqual(
        (await ids(gw)).filter((id) => id.startsWith(MAIN2) && /\.b[0-9a-f]+$/.test(id)),
        [],
        'no branch',
      );
      // The main chat took neither compaction.
      assert.equal(eventsOfType(await sessionEvents(gw.url, MAIN2), 'compaction').length, 0);
    });
  }
});
