/**
 * Heavy work takes turns fairly between teams (SPEC section 14): one team's many in-quota large
 * requests do not stall another team's calls. The heavy stages of a large request take turns of
 * the event loop round robin between teams, so another team's large request waits about one turn
 * per team ahead of it instead of one per request in flight, and a small request takes no turn at
 * all. Asserted on order (which request the provider received first, which answer came back while
 * the others were still in flight), never on time.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { postStatus } from '../helpers/raw-http.ts';
import { newKey } from '../../server/cli-keys.ts';
import { HEAVY_BODY_BYTES } from '../../server/model-call/index.ts';

const teamA = newKey();
const teamB = newKey();

/** POSTs `body` to the Messages route as `key` in session `session`; resolves with the status. */
function post(url: string, key: string, session: string, body: Buffer): Promise<number> {
  const headers = { 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-session-id': session };
  return postStatus(`${url}/v1/messages`, body, headers, { agent: false });
}

/** A new chat of `n` messages of about 250 bytes: binding and logging it takes dozens of turns. */
function history(n: number, tag: string): Buffer {
  const messages = Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? 'assistant' : 'user',
    content: `${tag} message ${i}: ${'lorem ipsum dolor sit amet '.repeat(9)}`,
  }));
  return Buffer.from(JSON.stringify({ model: 'claude-test', max_tokens: 10, messages }));
}

/** Waits (polling, no deadline asserted) until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail(`gave up waiting: ${what}`);
}

describe('heavy work takes turns fairly between teams', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [
          { name: 'a', keys: [teamA.hash] },
          { name: 'b', keys: [teamB.hash] },
        ],
      },
    });
  });
  after(async () => gw.close());

  test('another team’s large request reaches the provider before one team’s many; its small one is answered meanwhile', async () => {
    gw.fake.reset();
    const HEAVY = 8;
    const heavyA = Array.from({ length: HEAVY }, (_, i) => history(4_001, `a${i}`));
    const heavyB = history(4_001, 'b');
    for (const b of [...heavyA, heavyB]) assert.ok(b.length >= HEAVY_BODY_BYTES, `heavy (${b.length})`);
    const small = Buffer.from(
      JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    );

    const doneA: number[] = [];
    const callsA = heavyA.map((body, i) =>
      post(gw.url, teamA.key, `heavy-a${i}`, body).then((status) => {
        doneA.push(i);
        return status;
      }),
    );
    // Team a's requests have all started binding their histories, taking turn after turn.
    const binding = new Set<number>();
    await until(() => {
      heavyA.forEach((_, i) => {
        if (gw.gateway.context.chats.bindsInProgress(`t:a:heavy-a${i}`) > 0) binding.add(i);
      });
      return binding.size === HEAVY;
    }, 'team a’s heavy requests binding');
    assert.equal(gw.fake.requests.length, 0, 'none of team a’s requests has reached the provider yet');
    let heavyADoneWhenSmallAnswered = -1;
    const smallB = post(gw.url, teamB.key, 'small-b', small).then((status) => {
      heavyADoneWhenSmallAnswered = doneA.length;
      return status;
    });
    const callB = post(gw.url, teamB.key, 'heavy-b', heavyB);

    const statuses = await Promise.all([...callsA, callB, smallB]);
    assert.deepEqual(statuses, Array(HEAVY + 2).fill(200));
    assert.equal(
      heavyADoneWhenSmallAnswered,
      0,
      'the small call was answered before any heavy one of team a',
    );

    // What the provider received, in order: b's large request waited about one turn per round,
    // not one per request of a's in flight, so it went out before a's.
    const order = gw.fake.requests.map((r) => {
      const first = (r.json?.messages as Array<{ content: string }> | undefined)?.[0]?.content ?? '';
      return first.split(' ')[0]!;
    });
    assert.equal(order.length, HEAVY + 2, order.join(' '));
    assert.equal(order[0], 'hi', `the small call first: ${order.join(' ')}`);
    assert.equal(order[1], 'b', `then team b's large request, before team a's: ${order.join(' ')}`);
  });
});
