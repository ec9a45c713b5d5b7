import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/start-gateway.ts';

/**
 * The binder recognises a history that starts with the previous request's messages from the bytes
 * the client sent (the messages' byte ranges, found by the body's shape scan), without serialising
 * them again. A single changed byte in an early message must still be seen, and a history sent with
 * other spacing (the same messages) must still continue the chat.
 */
test('the verified prefix is compared byte for byte: one changed byte branches, other spacing continues', async () => {
  const gw = await startGateway();
  try {
    const answer = 'Hello from the fake provider.';
    const send = async (text: string) => {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': 'sk-ant-client',
          'anthropic-version': '2023-06-01',
          'x-session-id': 'bytes-chat',
        },
        body: text,
      });
      assert.equal(res.status, 200, await res.clone().text());
      await res.text();
      return res.headers.get('x-session-id')!;
    };
    const body = (messages: unknown[], indent?: number) =>
      JSON.stringify({ model: 'claude-test', max_tokens: 64, messages }, null, indent);
    const h: unknown[] = [
      { role: 'user', content: [{ type: 'text', text: 'first "question" ] with, brackets' }] },
    ];
    assert.equal(await send(body(h)), 'bytes-chat');
    h.push({ role: 'assistant', content: answer }, { role: 'user', content: 'second' });
    assert.equal(await send(body(h)), 'bytes-chat');
    // The same messages, indented: other bytes, equal messages: the chat goes on.
    h.push({ role: 'assistant', content: answer }, { role: 'user', content: 'third' });
    assert.equal(await send(body(h, 2)), 'bytes-chat');
    h.push({ role: 'assistant', content: answer }, { role: 'user', content: 'fourth' });
    assert.equal(await send(body(h)), 'bytes-chat');
    // One byte of the first message changed (the text, not its length): a branch.
    const edited = body(h).replace('first \\"question\\"', 'first \\"questioN\\"');
    assert.notEqual(edited, body(h));
    const branch = await send(edited);
    assert.match(branch, /^bytes-chat\.b[0-9a-f]{12}$/);

    const texts = async (id: string) => {
      const res = (await (await fetch(`${gw.url}/v1/sessions/${id}/events`)).json()) as {
        events: Array<{ type: string; role?: string; content?: Array<{ text?: string }> }>;
      };
      return res.events.filter((e) => e.type === 'message').map((e) => `${e.role}:${e.content?.[0]?.text}`);
    };
    const logged = [
      'user:first "question" ] with, brackets',
      `model:${answer}`,
      'user:second',
      `model:${answer}`,
      'user:third',
      `model:${answer}`,
      'user:fourth',
      `model:${answer}`,
    ];
    assert.deepEqual(await texts('bytes-chat'), logged);
    assert.equal((await texts(branch))[0], 'user:first "questioN" ] with, brackets');
    // What the provider received is what the client sent.
    const sent = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent.length, 5);
    assert.equal(sent[4]!.raw.toString('utf8'), edited);
  } finally {
    await gw.close();
  }
});
