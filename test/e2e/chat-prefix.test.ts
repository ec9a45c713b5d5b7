import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/start-gateway.ts';
import { openaiCompletion as openaiAnswer } from '../fake-provider/fake-bodies.ts';

type Msg = { role: 'user' | 'assistant'; content: string };

/**
 * The binder skips re-normalizing a history prefix it verified on the chat's previous request.
 * A divergence just after that prefix must still be seen (and branch), and the branch continue.
 */
test('a divergence right after the verified prefix branches, and the branch goes on', async () => {
  const gw = await startGateway();
  try {
    const send = async (messages: Msg[]) => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'prefix-chat' },
        body: JSON.stringify({ model: 'gpt-test', messages }),
      });
      assert.equal(res.status, 200);
      return res.headers.get('x-session-id')!;
    };
    const answer = 'Hello from the fake provider.';
    const h: Msg[] = [{ role: 'user', content: 'u1' }];
    assert.equal(await send(h), 'prefix-chat');
    h.push({ role: 'assistant', content: answer }, { role: 'user', content: 'u2' });
    assert.equal(await send(h), 'prefix-chat');
    // The client rewrites the last answer: the history diverges right after the verified prefix.
    const edited: Msg[] = [
      ...h,
      { role: 'assistant', content: 'an edited answer' },
      { role: 'user', content: 'u3' },
    ];
    const branch = await send(edited);
    assert.notEqual(branch, 'prefix-chat');
    assert.match(branch, /^prefix-chat\.b[0-9a-f]{12}$/);
    edited.push({ role: 'assistant', content: answer }, { role: 'user', content: 'u4' });
    assert.equal(await send(edited), branch);

    const texts = async (id: string) => {
      const body = (await (await fetch(`${gw.url}/v1/sessions/${id}/events`)).json()) as {
        events: Array<{ type: string; role?: string; content?: Array<{ text?: string }> }>;
      };
      return body.events.filter((e) => e.type === 'message').map((e) => `${e.role}:${e.content?.[0]?.text}`);
    };
    assert.deepEqual(await texts('prefix-chat'), [
      'user:u1',
      `model:${answer}`,
      'user:u2',
      `model:${answer}`,
    ]);
    assert.deepEqual(await texts(branch), [
      'user:u1',
      `model:${answer}`,
      'user:u2',
      'model:an edited answer',
      'user:u3',
      `model:${answer}`,
      'user:u4',
      `model:${answer}`,
    ]);
  } finally {
    await gw.close();
  }
});

test('a regenerated answer is logged in the branch its continuation is bound to, not after the first', async () => {
  const gw = await startGateway();
  try {
    const send = async (messages: Msg[], answer: string) => {
      gw.fake.script({ json: openaiAnswer('gpt-test', answer) });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'regen-chat' },
        body: JSON.stringify({ model: 'gpt-test', messages }),
      });
      assert.equal(res.status, 200);
      return res.headers.get('x-session-id')!;
    };
    const h: Msg[] = [{ role: 'user', content: 'q1' }];
    assert.equal(await send(h, 'first answer'), 'regen-chat');
    // The user asks for another answer a moment after reading the first.
    gw.clock.advance(1000);
    // The answer's x-session-id names the chat the regenerated exchange is logged in.
    const regenerated = await send(h, 'regenerated answer');
    assert.match(regenerated, /^regen-chat\.b[0-9a-f]{12}$/);
    const branch = await send(
      [...h, { role: 'assistant', content: 'regenerated answer' }, { role: 'user', content: 'q2' }],
      'third',
    );
    assert.equal(branch, regenerated, 'the continuation goes on where the regenerated answer is');
    const texts = async (id: string) => {
      const body = (await (await fetch(`${gw.url}/v1/sessions/${id}/events`)).json()) as {
        events: Array<{ type: string; role?: string; content?: Array<{ text?: string }> }>;
      };
      return body.events.filter((e) => e.type === 'message').map((e) => `${e.role}:${e.content?.[0]?.text}`);
    };
    assert.deepEqual(await texts('regen-chat'), ['user:q1', 'model:first answer']);
    assert.deepEqual(await texts(branch), ['user:q1', 'model:regenerated answer', 'user:q2', 'model:third']);

    // Streamed, the header goes out before the answer exists: it still names where it is logged.
    gw.clock.advance(1000);
    const streamed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'regen-chat' },
      body: JSON.stringify({ model: 'gpt-test', messages: h, stream: true }),
    });
    assert.equal(streamed.status, 200);
    const third = streamed.headers.get('x-session-id')!;
    await streamed.text();
    assert.notEqual(third, regenerated);
    assert.match(third, /^regen-chat\.b[0-9a-f]{12}$/);
    assert.equal((await texts(third)).length, 2, 'the streamed answer is logged where the header says');
    // No chat is left with a request and no response (events a branch inherited aside).
    for (const id of ['regen-chat', regenerated, third]) {
      const { header } = (await (await fetch(`${gw.url}/v1/sessions/${id}`)).json()) as {
        header: { inheritedEvents?: number };
      };
      const body = (await (await fetch(`${gw.url}/v1/sessions/${id}/events`)).json()) as {
        events: Array<{ seq: number; type: string; requestId?: string }>;
      };
      const own = body.events.filter((e) => e.seq >= (header.inheritedEvents ?? 0));
      const requests = own.filter((e) => e.type === 'request').map((e) => e.requestId);
      const responses = own.filter((e) => e.type === 'response').map((e) => e.requestId);
      assert.deepEqual(responses, requests, `${id}: every request has its response`);
    }
  } finally {
    await gw.close();
  }
});

/** `oda_history_messages_total` by `how`, read from the gateway's /metrics. */
async function historyCounts(url: string): Promise<{ recognised: number; compared: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (how: string) =>
    Number(new RegExp(`^oda_history_messages_total\\{how="${how}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { recognised: count('recognised'), compared: count('compared') };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

test('a request that extends the history of one still being logged waits for it, then compares only what follows', async () => {
  const gw = await startGateway();
  try {
    const id = 'waiting-chat';
    const post = (messages: Msg[]) =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': id },
        body: JSON.stringify({ model: 'gpt-test', messages }),
      });
    const answer = 'Hello from the fake provider.';
    const h1: Msg[] = [{ role: 'user', content: 'u1' }];
    const h2: Msg[] = [...h1, { role: 'assistant', content: answer }, { role: 'user', content: 'u2' }];
    const h3: Msg[] = [...h2, { role: 'assistant', content: answer }, { role: 'user', content: 'u3' }];
    assert.equal((await post(h1)).status, 200);
    const before = await historyCounts(gw.url);

    // Hold the chat's lock, so turn 2 is still logging its history when turn 3 (which carries it) comes.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const held = gw.gateway.context.chatLog.withChat(id, () => gate);
    const binds = () => gw.gateway.context.chats.bindsInProgress(id);
    const second = post(h2);
    await until(() => binds() === 1, 'turn 2 is being bound');
    const third = post(h3);
    await until(() => binds() === 2, 'turn 3 is being bound');
    release();
    await held;
    const [r2, r3] = await Promise.all([second, third]);
    assert.equal(r2.status, 200);
    assert.equal(r3.status, 200);
    assert.equal(r2.headers.get('x-session-id'), id);
    assert.equal(r3.headers.get('x-session-id'), id, 'turn 3 continues the chat, no branch');

    // Turn 2 recognises turn 1's message and compares its own two; turn 3 waited for turn 2 and
    // recognises its three (without waiting it would recognise 1 and compare 4).
    const after = await historyCounts(gw.url);
    assert.deepEqual(
      { recognised: after.recognised - before.recognised, compared: after.compared - before.compared },
      { recognised: 1 + 3, compared: 2 + 2 },
    );
    const body = (await (await fetch(`${gw.url}/v1/sessions/${id}/events`)).json()) as {
      events: Array<{ type: string; role?: string; content?: Array<{ text?: string }> }>;
    };
    assert.deepEqual(
      body.events.filter((e) => e.type === 'message').map((e) => `${e.role}:${e.content?.[0]?.text}`),
      ['user:u1', `model:${answer}`, 'user:u2', `model:${answer}`, 'user:u3', `model:${answer}`],
    );
    assert.equal(binds(), 0, 'nothing left in progress');
  } finally {
    await gw.close();
  }
});
