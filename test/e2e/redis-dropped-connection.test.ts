/**
 * A gateway on Redis whose connection drops after Redis ran a command but before its reply came
 * back (README, "Several replicas on Redis"): the request still succeeds, the decision it recorded
 * is in the log once, and the chat's lock is not waited on until its lease runs out. The drops come
 * from a proxy between the gateway and the test Redis (test/helpers/redis-cut-proxy.ts).
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../helpers/redis-test.ts';
import { redisCutProxy, type RedisCutProxy } from '../helpers/redis-cut-proxy.ts';
import { sessionEvents } from '../helpers/session-events.ts';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';

const ANSWER = 'Hello from the fake provider.';
const cleanups: Array<() => Promise<void>> = [];

after(async () => {
  for (const clean of cleanups.reverse()) await clean();
});

/** A gateway whose Redis store is reached through a cut proxy. */
async function gatewayThroughProxy(config = {}): Promise<{ gw: TestGateway; proxy: RedisCutProxy }> {
  const proxy = await redisCutProxy(redisUrl!);
  const prefix = uniquePrefix('e2e-dropped');
  const gw = await startGateway({
    config: { store: { kind: 'redis', url: proxy.url }, ...config },
    deps: { backend: new RedisLogBackend({ url: proxy.url, prefix }) },
  });
  cleanups.push(async () => {
    await gw.close();
    await proxy.close();
    await dropPrefix(prefix);
  });
  return { gw, proxy };
}

async function chat(gw: TestGateway, session: string, body: Record<string, unknown>) {
  const started = Date.now();
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({ model: 'gpt-test', ...body }),
  });
  return { status: res.status, text: await res.text(), ms: Date.now() - started };
}

const limits = { timeout: 30_000 };

describe(
  'A dropped Redis connection under a running gateway',
  { skip: redisSkip || (testStoreIsRedis && 'runs once, in the file-store pass') },
  () => {
    test(
      'a trim decision whose append lost its reply is recorded once, and the call succeeds',
      limits,
      async () => {
        const { gw, proxy } = await gatewayThroughProxy({ models: { 'small-*': { contextWindow: 8000 } } });
        const dropped = proxy.cutOn((c) => c.includes('RPUSH') && c.includes('tool-result-trimmed'));
        const res = await chat(gw, 'trim-once', {
          model: 'small-test',
          messages: [
            { role: 'user', content: 'run the tool' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } }],
            },
            { role: 'tool', tool_call_id: 'call_1', content: 'x'.repeat(40_000) },
          ],
        });
        assert.equal(res.status, 200, res.text);
        await dropped;
        assert.equal(proxy.cuts, 1);
        const events = await sessionEvents(gw.url, 'trim-once');
        assert.deepEqual(
          events.map((e) => e.seq),
          events.map((_, i) => i),
          'contiguous',
        );
        assert.equal(events.filter((e) => e.type === 'tool-result-trimmed').length, 1, 'the decision once');
      },
    );

    test('a chat lock whose reply was lost does not lock the chat out for its lease', limits, async () => {
      const { gw, proxy } = await gatewayThroughProxy();
      const first = [{ role: 'user', content: 'a' }];
      assert.equal((await chat(gw, 'lock-once', { messages: first })).status, 200);
      const dropped = proxy.cutOn((c) => c.includes('chat:lock-once:lock'));
      const res = await chat(gw, 'lock-once', {
        messages: [...first, { role: 'assistant', content: ANSWER }, { role: 'user', content: 'b' }],
      });
      await dropped;
      assert.equal(res.status, 200, res.text);
      assert.ok(res.ms < 5000, `took ${res.ms} ms (a lease is 10 s)`);
      const events = await sessionEvents(gw.url, 'lock-once');
      const said = events.flatMap((e) =>
        e.type === 'message' && e.content[0]?.kind === 'text' ? [`${e.role}:${e.content[0].text}`] : [],
      );
      assert.deepEqual(said, ['user:a', `model:${ANSWER}`, 'user:b', `model:${ANSWER}`]);
    });
  },
);
