/**
 * A session's chats whose logs disappear under a running gateway that holds them in memory, as
 * the log viewer reads them: a sub-agent's chat removed (its file on the file store, its keys on
 * Redis) leaves its session's tree, and the session read and the reads of what the model received
 * and of a chat's images are, for a removed chat, the 404 of a chat that never was, on both stores.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { dropPrefix, redisSkip, uniquePrefix } from '../helpers/redis-test.ts';
import {
  startGateway,
  startGatewayOnRedis,
  testStoreIsRedis,
  type TestGateway,
} from '../helpers/start-gateway.ts';

const SESSION = '3c1e7f0a-5b2d-4e8f-9a6c-0d1b2c3d4e5f';
const MAIN = `claude-code:${SESSION}`;
/** A 1x1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const clean of cleanups) await clean();
});

const once = testStoreIsRedis && 'runs once, in the file-store pass';
const limits = { timeout: 30_000 };

/** A gateway on the file store, or on Redis under a prefix of its own (returned to drop keys). */
async function gateway(onRedis: boolean): Promise<{ gw: TestGateway; prefix: string }> {
  const prefix = uniquePrefix('e2e-removed-session');
  const gw = onRedis ? await startGatewayOnRedis(prefix) : await startGateway();
  cleanups.push(async () => {
    await gw.close();
    if (onRedis) await dropPrefix(prefix);
  });
  return { gw, prefix };
}

/** A Claude Code call of the session (a sub-agent's with `agent`); the chat it landed in. */
async function claudeCode(gw: TestGateway, text: string, agent?: string): Promise<string> {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-claude-code-session-id': SESSION,
      ...(agent ? { 'x-claude-code-agent-id': agent } : {}),
    },
    body: JSON.stringify({
      model: 'claude-x',
      max_tokens: 50,
      messages: [{ role: 'user', content: text }],
      tools: [{ name: 'Task', input_schema: { type: 'object' } }],
    }),
  });
  assert.equal(res.status, 200, await res.text());
  return res.headers.get('x-session-id')!;
}

interface Node {
  id: string;
  children: Node[];
}

/** The ids of the session's tree, as `GET /v1/sessions/{id}` gives it. */
async function treeIds(gw: TestGateway, id: string): Promise<string[]> {
  const res = await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(id)}`);
  assert.equal(res.status, 200);
  const ids: string[] = [];
  const walk = (n: Node) => {
    ids.push(n.id);
    n.children.forEach(walk);
  };
  walk(((await res.json()) as { conversations: Node }).conversations);
  return ids;
}

describe('a session whose chats disappear under a running gateway', () => {
  for (const onRedis of [false, true])
    test(
      `${onRedis ? 'Redis' : 'file store'}: a removed sub-agent's chat leaves its session's tree`,
      { ...limits, skip: once || (onRedis && redisSkip) },
      async () => {
        const { gw, prefix } = await gateway(onRedis);
        assert.equal(await claudeCode(gw, 'main task'), MAIN);
        const sub = await claudeCode(gw, 'a sub-agent task', 'a1b2c3');
        const other = await claudeCode(gw, 'another sub-agent task', 'd4e5f6');
        // Read once each: the gateway holds them in memory.
        assert.deepEqual(await treeIds(gw, MAIN), [MAIN, sub, other]);
        assert.equal((await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(sub)}`)).status, 200);

        if (onRedis) await dropPrefix(`${prefix}chat:${sub}:`);
        else rmSync(join(gw.dataDir, 'chats', `${sub}.jsonl`));
        // Nothing has read the sub-agent's chat since: the session read finds it gone.
        assert.deepEqual(await treeIds(gw, MAIN), [MAIN, other], 'the removed chat is not in the tree');
        assert.deepEqual(await treeIds(gw, other), [MAIN, other], 'nor in the tree read from a sibling');
        assert.equal((await fetch(`${gw.url}/v1/sessions/${encodeURIComponent(sub)}`)).status, 404);
      },
    );

  /**
   * Makes chat `id` with an image, reads `read` of it, removes its log (its file, or its keys under
   * `prefix` on Redis) and reads it again: the answer of a chat that never was, status and body.
   */
  async function removedThenRead(
    { gw, prefix }: { gw: TestGateway; prefix: string },
    onRedis: boolean,
    id: string,
    read: (sha256: string) => string,
  ) {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': id },
      body: JSON.stringify({
        model: 'gpt-test',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            ],
          },
        ],
      }),
    });
    assert.equal(res.status, 200, await res.text());
    const logged = await (await fetch(`${gw.url}/v1/sessions/${id}/events`)).text();
    const sha256 = /"sha256":"([0-9a-f]{64})"/.exec(logged)![1]!;
    const path = read(sha256);
    assert.equal(
      (await fetch(`${gw.url}/v1/sessions/${id}${path}`)).status,
      200,
      'read once: held in memory',
    );
    if (onRedis) await dropPrefix(`${prefix}chat:${id}:`);
    else rmSync(join(gw.dataDir, 'chats', `${id}.jsonl`));
    const gone = await fetch(`${gw.url}/v1/sessions/${id}${path}`);
    const never = await fetch(`${gw.url}/v1/sessions/never-was${path}`);
    assert.equal(gone.status, 404);
    assert.equal(never.status, 404);
    assert.deepEqual(await gone.json(), JSON.parse((await never.text()).replaceAll('never-was', id)));
    assert.equal((await fetch(`${gw.url}/v1/sessions/${id}`)).status, 404, 'and forgotten');
  }

  for (const onRedis of [false, true]) {
    const store = onRedis ? 'Redis: its keys lost' : 'file store: its file removed';
    const skip = once || (onRedis && redisSkip);

    test(`${store}, the session read is the 404 of a chat that never was`, { ...limits, skip }, async () => {
      await removedThenRead(await gateway(onRedis), onRedis, 'read', () => '');
    });

    test(
      `${store}, what the model received is the 404 of a chat that never was`,
      { ...limits, skip },
      async () => {
        const gw = await gateway(onRedis);
        await removedThenRead(gw, onRedis, 'seen', () => '/received?offset=0');
        // A read past the end of the log reads nothing from the log.
        await removedThenRead(gw, onRedis, 'seen-at-end', () => '/received?offset=50');
      },
    );

    test(
      `${store}, a read of its events is the 404 of a chat that never was`,
      { ...limits, skip },
      async () => {
        const gw = await gateway(onRedis);
        await removedThenRead(gw, onRedis, 'events-read', () => '/events?offset=0');
        await removedThenRead(gw, onRedis, 'events-tail', () => '/events?offset=1&length=5');
      },
    );

    test(`${store}, a chat's image is the 404 of a chat that never was`, { ...limits, skip }, async () => {
      await removedThenRead(
        await gateway(onRedis),
        onRedis,
        'pictured',
        (sha256) => `/attachments/${sha256}`,
      );
    });
  }
});
