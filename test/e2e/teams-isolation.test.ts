/**
 * Chats belong to the team that created them (SPEC section 8): a team's chat ids live in its own
 * namespace, another team's chat answers 404 on every session route and is never appended to,
 * derived ids include the team, and admins see everything.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { newKey } from '../../server/cli-keys.ts';

const research = newKey();
const design = newKey();
const admin = newKey();

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function call(
  gw: TestGateway,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

const turn = (text: string) => ({ model: 'gpt-test', messages: [{ role: 'user', content: text }] });

/** One model call; returns the chat id the gateway used. */
async function ask(
  gw: TestGateway,
  key: string,
  text: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return call(gw, key, 'POST', '/v1/chat/completions', turn(text), headers);
}

async function eventCount(gw: TestGateway, id: string): Promise<number> {
  const res = await call(gw, admin.key, 'GET', `/v1/sessions/${encodeURIComponent(id)}/events`);
  assert.equal(res.status, 200);
  return (res.body.events as unknown[]).length;
}

function listed(a: Answer): string[] {
  return (a.body.sessions as Array<{ id: string }>).map((s) => s.id).sort();
}

describe('teams: each team sees and writes only its own chats', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [
          { name: 'research', keys: [research.hash] },
          { name: 'design', keys: [design.hash] },
        ],
        adminKeys: [admin.hash],
      },
    });
  });
  after(() => gw.close());

  test('the same x-session-id from two teams names two chats, each in its team’s namespace', async () => {
    const r = await ask(gw, research.key, 'research turn', { 'x-session-id': 'shared' });
    const d = await ask(gw, design.key, 'design turn', { 'x-session-id': 'shared' });
    assert.equal(r.status, 200);
    assert.equal(d.status, 200);
    assert.equal(r.headers.get('x-session-id'), 't:research:shared');
    assert.equal(d.headers.get('x-session-id'), 't:design:shared');
    const header = await call(gw, admin.key, 'GET', '/v1/sessions/t:research:shared');
    assert.equal((header.body.header as { team: string }).team, 'research');
  });

  test('another team’s chat is a 404 on every session route, by its full id or any spelling', async () => {
    const before = await eventCount(gw, 't:research:shared');
    for (const id of ['t:research:shared', 't%3Aresearch%3Ashared']) {
      for (const path of [
        `/v1/sessions/${id}`,
        `/v1/sessions/${id}/events`,
        `/v1/sessions/${id}/events?offset=0&length=1`,
      ]) {
        const a = await call(gw, design.key, 'GET', path);
        assert.equal(a.status, 404, path);
        assert.equal((a.body.error as { code: string }).code, 'ODA_ERR_NOT_FOUND');
        assert.ok(!JSON.stringify(a.body).includes('research turn'));
      }
    }
    // Its own chat of the same short name is what the bare id names for design.
    const own = await call(gw, design.key, 'GET', '/v1/sessions/shared');
    assert.equal(own.status, 200);
    assert.equal((own.body.header as { id: string }).id, 't:design:shared');
    // Creating "the other team's id" makes a chat in design's own namespace; research's is untouched.
    const created = await call(gw, design.key, 'POST', '/v1/sessions', { id: 't:research:shared' });
    assert.equal(created.status, 201);
    assert.equal((created.body.header as { id: string }).id, 't:design:t:research:shared');
    assert.equal(await eventCount(gw, 't:research:shared'), before);
  });

  test('another team’s chat is never appended to, whichever header names it', async () => {
    const before = await eventCount(gw, 't:research:shared');
    const viaHeader = await ask(gw, design.key, 'sneaky turn', { 'x-session-id': 't:research:shared' });
    assert.equal(viaHeader.status, 200);
    assert.equal(viaHeader.headers.get('x-session-id'), 't:design:t:research:shared');
    const viaClientId = await ask(gw, design.key, 'sneaky turn', { 'x-claude-code-session-id': 'abc' });
    assert.equal(viaClientId.headers.get('x-session-id'), 't:design:claude-code:abc');
    assert.equal(await eventCount(gw, 't:research:shared'), before);
  });

  test('lists: a team sees only its chats; an admin sees all', async () => {
    const r = listed(await call(gw, research.key, 'GET', '/v1/sessions'));
    const d = listed(await call(gw, design.key, 'GET', '/v1/sessions'));
    const all = listed(await call(gw, admin.key, 'GET', '/v1/sessions'));
    assert.ok(r.length > 0 && d.length > 0);
    assert.ok(
      r.every((id) => id.startsWith('t:research:')),
      r.join(),
    );
    assert.ok(
      d.every((id) => id.startsWith('t:design:')),
      d.join(),
    );
    assert.deepEqual(all, [...r, ...d].sort());
    for (const id of all) assert.equal((await call(gw, admin.key, 'GET', `/v1/sessions/${id}`)).status, 200);
  });

  test('derived ids include the team: the same conversation from two teams is two chats', async () => {
    const r = await ask(gw, research.key, 'no session header at all');
    const d = await ask(gw, design.key, 'no session header at all');
    const rid = r.headers.get('x-session-id') ?? '';
    const did = d.headers.get('x-session-id') ?? '';
    assert.match(rid, /^t:research:chat-[0-9a-f]{32}$/);
    assert.match(did, /^t:design:chat-[0-9a-f]{32}$/);
    assert.notEqual(
      rid.slice('t:research:'.length),
      did.slice('t:design:'.length),
      'the derivation itself includes the team',
    );
  });

  test('a chat a team creates with POST is the one its model calls with that id reach', async () => {
    const created = await call(gw, research.key, 'POST', '/v1/sessions', { id: 'proj-1', cwd: '/srv/proj' });
    assert.equal(created.status, 201);
    assert.deepEqual(
      [(created.body.header as { id: string }).id, (created.body.header as { team: string }).team],
      ['t:research:proj-1', 'research'],
    );
    const used = await ask(gw, research.key, 'into my chat', { 'x-session-id': 'proj-1' });
    assert.equal(used.headers.get('x-session-id'), 't:research:proj-1');
    assert.ok((await eventCount(gw, 't:research:proj-1')) > 0);
    assert.equal((await call(gw, research.key, 'GET', '/v1/sessions/proj-1/events')).status, 200);
    assert.equal((await call(gw, design.key, 'GET', '/v1/sessions/t:research:proj-1/events')).status, 404);
    assert.equal((await call(gw, research.key, 'POST', '/v1/sessions', { id: 'proj-1' })).status, 409);
  });

  test('a branch of a team’s chat stays in the team', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: research.key, maxRetries: 0 });
    const headers = { 'x-session-id': 'branching' };
    const first = await client.chat.completions.create(
      { model: 'gpt-test', messages: [{ role: 'user', content: 'one' }] },
      { headers },
    );
    const { response } = await client.chat.completions
      .create(
        {
          model: 'gpt-test',
          messages: [
            { role: 'user', content: 'one' },
            { role: 'assistant', content: `edited, not ${first.choices[0]!.message.content}` },
            { role: 'user', content: 'two' },
          ],
        },
        { headers },
      )
      .withResponse();
    const branch = response.headers.get('x-session-id') ?? '';
    assert.ok(branch.startsWith('t:research:branching') && branch !== 't:research:branching', branch);
    const header = (await call(gw, admin.key, 'GET', `/v1/sessions/${branch}`)).body.header as {
      team: string;
      parent: string;
    };
    assert.deepEqual([header.team, header.parent], ['research', 't:research:branching']);
    assert.equal((await call(gw, design.key, 'GET', `/v1/sessions/${branch}`)).status, 404);
  });

  test('a chat an admin put in a team’s namespace is not the team’s: 404, never appended to', async () => {
    const planted = await call(gw, admin.key, 'POST', '/v1/sessions', { id: 't:research:planted' });
    assert.equal(planted.status, 201);
    const a = await ask(gw, research.key, 'into the planted chat', { 'x-session-id': 't:research:planted' });
    assert.equal(a.status, 404);
    assert.equal((await call(gw, research.key, 'GET', '/v1/sessions/planted')).status, 404);
    assert.equal(await eventCount(gw, 't:research:planted'), 0);
    assert.equal(
      gw.fake.requestsTo('/v1/chat/completions').filter((r) => JSON.stringify(r.json).includes('planted'))
        .length,
      0,
    );
  });
});

describe('teams with long names: child chats stay in the namespace', () => {
  const team = 'platform-engineering-infrastructure-reliability-team-eu'; // 55 characters
  const member = newKey();
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { teams: [{ name: team, keys: [member.hash] }] } });
  });
  after(() => gw.close());

  test("a sub-agent's chat with a long agent id is the team's, and the team reads it", async () => {
    const res = await ask(gw, member.key, 'sub-agent work', {
      'x-claude-code-session-id': 'sess1',
      'x-claude-code-agent-id': 'a'.repeat(64),
    });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-session-id')!;
    assert.ok(id.startsWith(`t:${team}:`), id);
    const own = await call(gw, member.key, 'GET', `/v1/sessions/${encodeURIComponent(id)}`);
    assert.equal(own.status, 200);
  });
});
