import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isChatId } from '../chat-log/chat-id.ts';
import { childChatId, placeInSession, sideChatId, sideChatPrefix, subagentChatId } from './conversations.ts';
import { scopedChatId } from './team-scope.ts';

const longTeam = 'platform-engineering-infrastructure-reliability-team-eu'; // 55 characters
const caller = (team: string) => ({ team, admin: false }) as Parameters<typeof scopedChatId>[1];

test("a child chat of a team's chat stays in the team's namespace, whatever the lengths", () => {
  for (const team of [longTeam, 'x'.repeat(64)]) {
    const main = scopedChatId('claude-code:sess1', caller(team));
    for (const agent of ['a'.repeat(64), `q:${'v'.repeat(62)}`, 'short']) {
      const id = subagentChatId(main, agent);
      assert.ok(id.startsWith(`t:${team}:`), id);
      assert.ok(id.length <= 128 && isChatId(id), id);
    }
    const side = sideChatId(main, 'x'.repeat(32), ['system', 'first']);
    assert.ok(side.startsWith(`t:${team}:`) && side.length <= 128, side);
  }
});

test("a team cannot make a chat inside another team's namespace that begins with its name", () => {
  // Teams `a…a` and `a…a.agent-q`: the first one's sub-agent `q:vvv…` must not be `t:a…a.agent-q:vvv…`.
  const first = 'a'.repeat(55);
  const id = subagentChatId(scopedChatId('s', caller(first)), `q:${'v'.repeat(62)}`);
  assert.ok(!id.startsWith(`t:${first}.agent-q:`), id);
  assert.ok(id.startsWith(`t:${first}:`), id);
});

test('child ids that fit are the base and the suffix; different long suffixes stay different', () => {
  assert.equal(childChatId('main', '.agent-x'), 'main.agent-x');
  const base = `t:${longTeam}:${'s'.repeat(40)}`;
  const one = subagentChatId(base, `${'v'.repeat(63)}1`);
  const two = subagentChatId(base, `${'v'.repeat(63)}2`);
  assert.notEqual(one, two);
  assert.equal(subagentChatId(base, `${'v'.repeat(63)}1`), one, 'the same agent gets the same chat');
});

test("a session's side chats start with its side chat prefix, however long the session's id", () => {
  for (const length of [10, 44, 99, 100, 111, 128]) {
    const main = `t:${'team'.padEnd(length - 3, 'x')}:`.slice(0, length);
    for (const purpose of ['summary', 'compaction', 'title']) {
      const id = sideChatId(main, purpose, ['system', 'first message']);
      assert.ok(isChatId(id));
      assert.ok(id.startsWith(sideChatPrefix(main, purpose)), `${id} under ${sideChatPrefix(main, purpose)}`);
      if (main.length + purpose.length + 19 <= 128)
        assert.equal(sideChatPrefix(main, purpose), `${main}.side-${purpose}-`);
    }
  }
  // Another session's side chats are not under it.
  assert.ok(
    !sideChatId('session:abcd', 'summary', ['r']).startsWith(sideChatPrefix('session:abc', 'summary')),
  );
});

test('a side request by its endpoint (a compaction) belongs to the sub-agent the client names', () => {
  const traits = { tools: 3, messages: 4, structuredOutput: false, maxTokens: undefined };
  const codex = (thread: string, kind: string) => ({
    'session-id': 'S',
    'thread-id': thread,
    'x-codex-turn-metadata': JSON.stringify({ session_id: 'S', thread_id: thread, request_kind: kind }),
  });
  // The endpoint's purpose, whatever request kind the client says; the thread's agent kept.
  for (const kind of ['turn', 'compaction', 'other_kind'])
    assert.deepEqual(placeInSession('client', codex('T1', kind), traits, 'compaction'), {
      kind: 'side',
      purpose: 'compaction',
      agentId: 'T1',
    });
  assert.deepEqual(placeInSession('client', codex('S', 'turn'), traits, 'compaction'), {
    kind: 'side',
    purpose: 'compaction',
  });
  assert.deepEqual(placeInSession('client', { 'x-claude-code-agent-id': 'a1' }, traits, 'compaction'), {
    kind: 'side',
    purpose: 'compaction',
    agentId: 'a1',
  });
  // A chat the caller named, or a response's: no sub-agent read from the headers.
  for (const source of ['header', 'derived', undefined] as const)
    assert.deepEqual(placeInSession(source, codex('T1', 'turn'), traits, 'compaction'), {
      kind: 'side',
      purpose: 'compaction',
    });
  // Without an endpoint's purpose, as before.
  assert.deepEqual(placeInSession('client', codex('T1', 'turn'), traits), {
    kind: 'subagent',
    agentId: 'T1',
  });
  assert.deepEqual(placeInSession('client', codex('S', 'turn'), traits), { kind: 'main' });
});
