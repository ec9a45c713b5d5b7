/**
 * Live tails of chat logs have caps of their own (SPEC section 14): a tail stays open as long as its
 * viewer, so without a cap one team's viewers could hold every connection the gateway accepts. The
 * caps are the call caps' numbers (`teams[].maxConcurrent`, `server.maxConcurrent`), counted apart
 * from calls, so a team's open viewers never take the slots its model calls need.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newKey } from '../../server/cli-keys.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const teamA = newKey();
const teamB = newKey();

describe('live tails: capped per team and in all, apart from calls', () => {
  let gw: TestGateway;
  const open: AbortController[] = [];
  before(async () => {
    gw = await startGateway({
      config: {
        server: { maxConcurrent: 3 },
        teams: [
          { name: 'a', keys: [teamA.hash], maxConcurrent: 2 },
          { name: 'b', keys: [teamB.hash], maxConcurrent: 2 },
        ],
      },
    });
  });
  after(async () => {
    for (const a of open) a.abort();
    await gw.close();
  });

  const ask = async (key: string, session: string) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'x-session-id': session,
      },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.arrayBuffer();
    return res;
  };
  /** Opens a tail; a tail that opened stays open (its body unread) until aborted. */
  const tail = async (key: string, chatId: string) => {
    const abort = new AbortController();
    const res = await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(chatId)}/tail`, {
      headers: { authorization: `Bearer ${key}` },
      signal: abort.signal,
    });
    if (res.status === 200) open.push(abort);
    const text = res.status === 200 ? '' : await res.text();
    return { res, abort, text };
  };

  test("a team's tails stop at its share, its calls still go, and another team's tails still open", async () => {
    const chatA = (await ask(teamA.key, 'watched-a')).headers.get('x-session-id')!;
    const chatB = (await ask(teamB.key, 'watched-b')).headers.get('x-session-id')!;
    const first = await tail(teamA.key, chatA);
    const second = await tail(teamA.key, chatA);
    assert.deepEqual([first.res.status, second.res.status], [200, 200]);
    const third = await tail(teamA.key, chatA);
    assert.equal(third.res.status, 429);
    assert.equal(third.res.headers.get('retry-after'), '1');

    // Two tails open: the team's model calls still have their two slots.
    const calls = await Promise.all([ask(teamA.key, 'watched-a'), ask(teamA.key, 'other-a')]);
    assert.deepEqual(
      calls.map((r) => r.status),
      [200, 200],
    );

    // Team b has its own share, within the gateway's 3 tails in all.
    assert.equal((await tail(teamB.key, chatB)).res.status, 200);
    const overGateway = await tail(teamB.key, chatB);
    assert.equal(overGateway.res.status, 429);
    assert.match(overGateway.text, /server\.maxConcurrent/);

    // A viewer that leaves gives its place back.
    first.abort.abort();
    let again = 0;
    for (let i = 0; i < 50 && again !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = (await tail(teamA.key, chatA)).res.status;
    }
    assert.equal(again, 200);
  });
});
