/**
 * The binder knows a tool list it saw before by its bytes (server/known-tools.ts) and does not
 * digest it again. What the log records must be what digesting would give, and a changed
 * definition, even one of the same length, must still be seen.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/start-gateway.ts';
import { normalizeAnthropicRequest } from '../../providers/anthropic/normalize.ts';

type Ev = { type: string; tools?: unknown; added?: Array<{ tool: { name: string } }>; removed?: unknown[] };

const tool = (name: string, description: string) => ({
  name,
  description,
  input_schema: { type: 'object', properties: { path: { type: 'string', description: 'A path.' } } },
});

test('a known tool list logs the digests digesting gives, and a same-length change is still seen', async () => {
  const gw = await startGateway();
  try {
    const answer = 'Hello from the fake provider.';
    const messages: Array<{ role: string; content: string }> = [{ role: 'user', content: 'u1' }];
    const send = async (tools: unknown[]) => {
      const body = { model: 'claude-test', max_tokens: 10, tools, messages };
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'tools-chat' },
        // Spaced JSON: the bytes the gateway compares are the client's own.
        body: JSON.stringify(body, null, 1),
      });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      messages.push({ role: 'assistant', content: answer }, { role: 'user', content: `u${messages.length}` });
      return normalizeAnthropicRequest(body).tools;
    };
    const first = [tool('read', 'Reads aaa.'), tool('grep', 'Searches.')];
    const changed = [tool('read', 'Reads bbb.'), tool('grep', 'Searches.')];
    const expected = [await send(first), await send(first), await send(changed), await send(changed)];

    const res = await fetch(`${gw.url}/v1/sessions/tools-chat/events`);
    const events = ((await res.json()) as { events: Ev[] }).events;
    assert.deepEqual(
      events.filter((e) => e.type === 'request').map((e) => e.tools),
      expected,
    );
    const changes = events.filter((e) => e.type === 'tools-changed');
    assert.equal(changes.length, 1);
    assert.deepEqual(
      changes[0]!.added!.map((a) => a.tool.name),
      ['read'],
    );
    assert.notDeepEqual(expected[0], expected[2]);
  } finally {
    await gw.close();
  }
});
