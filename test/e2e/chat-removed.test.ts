/**
 * A chat whose log disappears under a running gateway that has it in memory: on Redis (its keys
 * lost: a Redis restarted without persistence, a failover to an empty replica) the next model call
 * creates it anew, as a gateway that never saw it would, instead of a 404 until restart; on the file
 * store (its file removed by hand) so does the call that finds it gone, nothing stored in the removed
 * file; a read of the chat (`GET /v1/sessions/{id}`, its events) finds it gone first when one comes
 * before, answering 404 as for a chat that never was, and the next call then creates it anew.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Event } from '../../chat-log/format/current.ts';
import { dropPrefix, redisSkip, uniquePrefix } from '../helpers/redis-test.ts';
import {
  startGateway,
  startGatewayOnRedis,
  testStoreIsRedis,
  type TestGateway,
} from '../helpers/start-gateway.ts';

const ANSWER = 'Hello from the fake provider.';
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const clean of cleanups) await clean();
});

async function chat(gw: TestGateway, session: string, messages: unknown[]) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({ model: 'gpt-test', messages }),
  });
  return { status: res.status, text: await res.text() };
}

async function events(gw: TestGateway, id: string): Promise<{ status: number; events: Event[] }> {
  const res = await fetch(`${gw.url}/v1/sessions/${id}/events`);
  const body = (await res.json()) as { events?: Event[] };
  return { status: res.status, events: body.events ?? [] };
}

const saidIn = (events: Event[]) =>
  events.flatMap((e) =>
    e.type === 'message' && e.content[0]?.kind === 'text' ? [`${e.role}:${e.content[0].text}`] : [],
  );

const once = testStoreIsRedis && 'runs once, in the file-store pass';
const limits = { timeout: 30_000 };

describe('a chat whose log disappears under a running gateway', () => {
  test('Redis: the next call creates the chat anew', { ...limits, skip: redisSkip || once }, async () => {
    const prefix = uniquePrefix('e2e-removed');
    const gw = await startGatewayOnRedis(prefix);
    cleanups.push(async () => {
      await gw.close();
      await dropPrefix(prefix);
    });
    assert.equal((await chat(gw, 'x', [{ role: 'user', content: 'hi' }])).status, 200);
    assert.equal((await fetch(`${gw.url}/v1/sessions/x`)).status, 200);

    await dropPrefix(prefix); // every key of the gateway's chats is gone
    assert.equal((await fetch(`${gw.url}/v1/sessions/x`)).status, 404, 'gone is gone');
    const res = await chat(gw, 'x', [{ role: 'user', content: 'fresh start' }]);
    assert.equal(res.status, 200, res.text);
    assert.equal((await fetch(`${gw.url}/v1/sessions/x`)).status, 200);
    const log = await events(gw, 'x');
    assert.equal(log.status, 200);
    assert.deepEqual(
      log.events.map((e) => e.seq),
      log.events.map((_, i) => i),
    );
    assert.deepEqual(saidIn(log.events), ['user:fresh start', `model:${ANSWER}`]);
  });

  test(
    'file store: the call that finds the file gone creates the chat anew, nothing stored in the removed file',
    { ...limits, skip: once },
    async () => {
      const gw = await startGateway();
      cleanups.push(() => gw.close());
      const first = [{ role: 'user', content: 'hi' }];
      assert.equal((await chat(gw, 'x', first)).status, 200);
      const file = join(gw.dataDir, 'chats', 'x.jsonl');
      rmSync(file);

      // The model call goes on: no 404 for a chat the client knows nothing about.
      const next = [...first, { role: 'assistant', content: ANSWER }, { role: 'user', content: 'more' }];
      const res = await chat(gw, 'x', next);
      assert.equal(res.status, 200, res.text);
      const log = await events(gw, 'x');
      assert.equal(log.status, 200);
      assert.deepEqual(
        log.events.map((e) => e.seq),
        log.events.map((_, i) => i),
        'one contiguous log from sequence 0',
      );
      assert.deepEqual(saidIn(log.events), ['user:hi', `model:${ANSWER}`, 'user:more', `model:${ANSWER}`]);
      assert.equal(log.events.filter((e) => e.type === 'request').length, 1, 'a new log: this call only');
    },
  );

  test(
    'file store: its file removed, the chat reads as one that does not exist and leaves the listing',
    { ...limits, skip: once },
    async () => {
      const gw = await startGateway();
      cleanups.push(() => gw.close());
      const listed = async () =>
        ((await (await fetch(`${gw.url}/v1/sessions`)).json()) as { data: Array<{ id: string }> }).data.map(
          (s) => s.id,
        );
      const history: unknown[] = [{ role: 'user', content: 'hi' }];
      assert.equal((await chat(gw, 'x', history)).status, 200);
      assert.equal((await fetch(`${gw.url}/v1/sessions/x`)).status, 200, 'read once: held in memory');
      assert.deepEqual(await listed(), ['x']);
      rmSync(join(gw.dataDir, 'chats', 'x.jsonl'));

      // Nothing has read the file since: the session read itself finds it gone.
      const gone = await fetch(`${gw.url}/v1/sessions/x`);
      const never = await fetch(`${gw.url}/v1/sessions/never-was`);
      assert.equal(gone.status, 404);
      assert.deepEqual(await gone.json(), JSON.parse((await never.text()).replaceAll('never-was', 'x')));
      assert.deepEqual(await listed(), [], 'no longer listed');

      // Found gone and forgotten, as after a read of its events: the next call creates it anew.
      history.push({ role: 'assistant', content: ANSWER }, { role: 'user', content: 'more' });
      const res = await chat(gw, 'x', history);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(saidIn((await events(gw, 'x')).events), [
        'user:hi',
        `model:${ANSWER}`,
        'user:more',
        `model:${ANSWER}`,
      ]);
      assert.deepEqual(await listed(), ['x']);
    },
  );

  test(
    'Redis: a replica that knew the lost chat follows the one another replica created anew',
    { ...limits, skip: redisSkip || once },
    async () => {
      const prefix = uniquePrefix('e2e-recreated');
      const replica = () => startGatewayOnRedis(prefix);
      const a = await replica();
      const b = await replica();
      cleanups.push(async () => {
        await a.close();
        await b.close();
        await dropPrefix(prefix);
      });
      const turns = async (gw: TestGateway, words: string[]) => {
        const messages: unknown[] = [];
        for (const word of words) {
          messages.push({ role: 'user', content: word });
          const res = await chat(gw, 'x', messages);
          assert.equal(res.status, 200, res.text);
          messages.push({ role: 'assistant', content: ANSWER });
        }
        return messages;
      };
      await turns(a, ['old-1', 'old-2']); // a holds the chat in memory
      await dropPrefix(prefix); // Redis lost every key
      b.clock.advance(60_000); // the chat made anew has another creation time
      const fresh = await turns(b, ['new-1', 'new-2', 'new-3']); // b creates it anew
      // The client's next turn lands on a: it continues the new chat, not a branch of it.
      const next = await fetch(`${a.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'x' },
        body: JSON.stringify({ model: 'gpt-test', messages: [...fresh, { role: 'user', content: 'new-4' }] }),
      });
      assert.equal(next.status, 200);
      assert.equal(next.headers.get('x-session-id'), 'x');
      const log = await events(b, 'x');
      assert.deepEqual(saidIn(log.events), [
        'user:new-1',
        `model:${ANSWER}`,
        'user:new-2',
        `model:${ANSWER}`,
        'user:new-3',
        `model:${ANSWER}`,
        'user:new-4',
        `model:${ANSWER}`,
      ]);
      const seen = (await (await fetch(`${a.url}/v1/sessions/x`)).json()) as {
        snapshot: { values: { totals: { messageCount: number } } };
      };
      assert.equal(seen.snapshot.values.totals.messageCount, 8, "a's read models hold the new chat only");
    },
  );

  test(
    'file store: a read of events at the end of the log finds the file gone too',
    { ...limits, skip: once },
    async () => {
      const gw = await startGateway();
      cleanups.push(() => gw.close());
      assert.equal((await chat(gw, 'x', [{ role: 'user', content: 'hi' }])).status, 200);
      const all = await events(gw, 'x');
      const end = all.events.length;
      const atEnd = async () => (await fetch(`${gw.url}/v1/sessions/x/events?offset=${end}`)).status;
      assert.equal(await atEnd(), 200, 'nothing new yet');
      rmSync(join(gw.dataDir, 'chats', 'x.jsonl'));
      assert.equal(await atEnd(), 404, 'a poll at the end of the log learns the chat is gone');
      assert.equal((await fetch(`${gw.url}/v1/sessions/x`)).status, 404);
    },
  );

  for (const onRedis of [false, true])
    test(
      `${onRedis ? 'Redis' : 'file store'}: the client goes on with the history it has, and the chat made anew holds all of it`,
      { ...limits, skip: once || (onRedis && redisSkip) },
      async () => {
        // The gateway remembers it had logged the first messages, but the new log does not hold them.
        const prefix = uniquePrefix('e2e-continued');
        const gw = onRedis ? await startGatewayOnRedis(prefix) : await startGateway();
        cleanups.push(async () => {
          await gw.close();
          if (onRedis) await dropPrefix(prefix);
        });
        const history: unknown[] = [{ role: 'user', content: 'hi' }];
        assert.equal((await chat(gw, 'x', history)).status, 200);
        history.push({ role: 'assistant', content: ANSWER }, { role: 'user', content: 'more' });
        assert.equal((await chat(gw, 'x', history)).status, 200);
        if (onRedis) await dropPrefix(prefix);
        else rmSync(join(gw.dataDir, 'chats', 'x.jsonl'));
        history.push({ role: 'assistant', content: ANSWER }, { role: 'user', content: 'and more' });
        const res = await chat(gw, 'x', history);
        assert.equal(res.status, 200, res.text);
        const log = await events(gw, 'x');
        assert.deepEqual(saidIn(log.events), [
          'user:hi',
          `model:${ANSWER}`,
          'user:more',
          `model:${ANSWER}`,
          'user:and more',
          `model:${ANSWER}`,
        ]);
      },
    );
});
