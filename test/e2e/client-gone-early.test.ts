/**
 * A client that leaves right after sending a large body (SPEC section 14). The checks of a body over
 * 1 MB take turns of the event loop, and the client may go during them: its call must end there,
 * not go to the provider for nobody, outside its team's share (the slot is already free), nor hang
 * in delivery waiting for a client that will never read.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { newKey } from '../../server/cli-keys.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import type { Event } from '../../chat-log/format/current.ts';

const team = newKey();
const CLIENTS = 12;

/** Sends an 8 MB streamed chat call on a raw socket and closes it `delayMs` after the last byte went. */
function sendAndLeave(gw: TestGateway, i: number, delayMs: number): Promise<void> {
  const url = new URL(gw.url);
  const body = JSON.stringify({
    model: 'gpt-test',
    stream: true,
    messages: [{ role: 'user', content: `call ${i} ${'z'.repeat(8_000_000)}` }],
  });
  const head =
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${team.key}\r\n` +
    `Content-Type: application/json\r\nx-session-id: gone-${i}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(head + body, () =>
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, delayMs),
      );
    });
    socket.on('error', () => resolve());
  });
}

describe('a client gone while its large body is checked', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [{ name: 'alpha', keys: [team.hash], maxConcurrent: 2 }],
        server: { maxConcurrent: 10 },
      },
    });
  });
  after(() => gw.close());

  test('its call never goes upstream, and no call hangs in delivery', { timeout: 60_000 }, async () => {
    for (let i = 0; i < CLIENTS; i++) await sendAndLeave(gw, i, 1 + (i % 4) * 3);
    const auth = { authorization: `Bearer ${team.key}` };
    // Every chat a call logged comes to end with its response (a call that hung in delivery logs
    // none); a busy machine may take a while over twelve 8 MB bodies, so this waits, up to 30 s.
    const unanswered = async () => {
      const list = (await (await fetch(`${gw.url}/v1/sessions?limit=100`, { headers: auth })).json()) as {
        data: { id: string }[];
      };
      const open: string[] = [];
      for (const chat of list.data) {
        const res = await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(chat.id)}/events`, {
          headers: auth,
        });
        const events = ((await res.json()) as { events: Event[] }).events;
        if (!events.some((e) => e.type === 'response')) open.push(chat.id);
      }
      return open;
    };
    let open = await unanswered();
    for (const end = Date.now() + 30_000; open.length > 0 && Date.now() < end; open = await unanswered()) {
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.deepEqual(open, [], 'chats that logged a request but no response');
    const upstream = gw.fake.requestsTo('/v1/chat/completions').length;
    assert.ok(upstream < CLIENTS / 2, `${upstream} of ${CLIENTS} calls went to the provider for nobody`);
    // The team's share is whole again: two calls at once go through. A call left while its body was
    // checked holds its slot until that work is over, which on a busy machine can outlast the
    // answers above, so a 429 is tried again (a slot never given back fails after 30 s).
    const twoAtOnce = () =>
      Promise.all(
        [0, 1].map(async (i) => {
          const res = await fetch(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: `after ${i}` }] }),
          });
          await res.arrayBuffer();
          return res.status;
        }),
      );
    let statuses = await twoAtOnce();
    for (const end = Date.now() + 30_000; statuses.includes(429) && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 250));
      statuses = await twoAtOnce();
    }
    assert.deepEqual(statuses, [200, 200]);
  });
});
