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
