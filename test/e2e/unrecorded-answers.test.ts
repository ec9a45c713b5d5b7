/**
 * An answer the client got is not lost when its record fails (SPEC section 6: a lasting log of
 * every chat). The store goes away while the provider is answering (a private Redis killed after
 * the request was logged, started again after the answers went out: a whole JSON answer and a
 * complete stream), or the chat's lock is held by another replica past the wait: the client gets
 * its 200, and once the store answers again the response event, the model message and the usage
 * are in the log, each once.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';
import { privateRedis, redisServerInstalled } from '../helpers/private-redis.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../helpers/redis-test.ts';
import { openaiCompletion, openaiStream } from '../fake-provider/fake-bodies.ts';
import type { RecordedRequest } from '../fake-provider/fake-provider.ts';

type Obj = Record<string, unknown>;

const ask = (text: string, stream = false) =>
  JSON.stringify({
    model: 'gpt-test',
    messages: [{ role: 'user', content: text }],
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });

function post(gw: TestGateway, chat: string, body: string): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': chat },
    body,
  });
}

async function events(gw: TestGateway, chat: string): Promise<Obj[]> {
  const res = await fetch(`${gw.url}/v1/sessions/${chat}/events`);
  if (res.status !== 200) return [];
  return ((await res.json()) as { events: Obj[] }).events;
}

/** The chat's events once its response event is logged (within `ms`), or as they are then. */
async function eventsOnceAnswered(gw: TestGateway, chat: string, ms = 15_000): Promise<Obj[]> {
  const until = Date.now() + ms;
  for (;;) {
    const got = await events(gw, chat).catch(() => []);
    if (got.some((e) => e.type === 'response') || Date.now() > until) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function metric(gw: TestGateway, line: RegExp): Promise<string | undefined> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return text.split('\n').find((l) => line.test(l));
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const textOf = (e: Obj) => ((e.content as Obj[] | undefined)?.[0]?.text as string | undefined) ?? '';

describe(
  'an answer whose record failed is recorded once the store answers again',
  {
    skip:
      (!redisServerInstalled && 'redis-server is not installed') ||
      (testStoreIsRedis && 'runs once, in the file-store pass'),
  },
  () => {
    test('Redis killed while the provider answers: the client gets 200, the log gets the answers and the usage when Redis is back', async () => {
      const redis = await privateRedis({ persist: true });
      const prefix = 'oda-test:unrecorded:';
      const gw = await startGateway({
        config: { store: { kind: 'redis', url: redis.url } },
        deps: {
          backend: new RedisLogBackend({ url: redis.url, prefix, readyWaitMs: 300 }),
          unrecorded: { firstDelayMs: 50, maxDelayMs: 400 },
        },
      });
      try {
        let answer!: () => void;
        const answering = new Promise<void>((r) => (answer = r));
        // The same held answer for the JSON call and the stream.
        const held = (rec: RecordedRequest) =>
          rec.json?.stream
            ? {
                sse: openaiStream('gpt-test', ['kept ', 'streamed']),
                holdAfter: { events: 2, until: answering },
              }
            : { json: openaiCompletion('gpt-test', 'kept whole', 12), after: answering };
        gw.fake.script(held, held);
        await until(
          'the gateway connected to Redis',
          async () => (await fetch(`${gw.url}/readyz`)).status === 200,
        );
        const whole = post(gw, 'kept-whole', ask('answer me whole'));
        const streamed = post(gw, 'kept-streamed', ask('answer me in a stream', true));
        // Both requests are logged and at the provider; the stream's first event is out.
        await until('both requests at the provider', () => gw.fake.requests.length === 2);
        const streamRes = await streamed;
        assert.equal(streamRes.status, 200);
        await redis.stop();
        answer();

        const wholeRes = await whole;
        assert.equal(wholeRes.status, 200);
        const body = (await wholeRes.json()) as { choices: Array<{ message: { content: string } }> };
        assert.equal(body.choices[0]!.message.content, 'kept whole');
        const sse = await streamRes.text();
        assert.match(sse, /"content":"streamed"/);
        assert.match(sse, /data: \[DONE\]/, 'the stream is complete');
        // Checked after the log: what matters most is what the log ends up holding.
        const waitingWhileDown = await metric(gw, /^oda_answers_waiting_to_be_recorded /);

        await redis.restart();
        const wholeEvents = await eventsOnceAnswered(gw, 'kept-whole');
        const streamedEvents = await eventsOnceAnswered(gw, 'kept-streamed');
        for (const [chat, logged, text, usage] of [
          ['kept-whole', wholeEvents, 'kept whole', { inputTokens: 12, outputTokens: 5 }],
          ['kept-streamed', streamedEvents, 'kept streamed', { inputTokens: 10, outputTokens: 2 }],
        ] as const) {
          const responses = logged.filter((e) => e.type === 'response');
          assert.equal(responses.length, 1, `${chat}: one response event: ${JSON.stringify(logged)}`);
          assert.equal(responses[0]!.status, 200);
          assert.equal(responses[0]!.ok, true);
          assert.ok(responses[0]!.usage, `${chat}: the response event has the usage`);
          const models = logged.filter((e) => e.type === 'message' && e.role === 'model');
          assert.deepEqual(
            models.map((m) => textOf(m)),
            [text],
            `${chat}: the answer is logged once`,
          );
          assert.ok(
            (models[0]!.seq as number) < (responses[0]!.seq as number),
            'the answer right after its history, then its response event',
          );
          const chatView = (await (await fetch(`${gw.url}/v1/sessions/${chat}`)).json()) as {
            usage: Obj;
          };
          assert.equal(chatView.usage.answered, 1, chat);
          assert.equal(chatView.usage.inputTokens, usage.inputTokens, chat);
          assert.equal(chatView.usage.outputTokens, usage.outputTokens, chat);
        }
        // The day's usage (the ledger, in Redis too) counts both answers.
        await until(
          'the usage ledger',
          async () => {
            const usage = (await (await fetch(`${gw.url}/v1/usage`)).json()) as {
              total: { answered: number };
            };
            return usage.total.answered === 2;
          },
          10_000,
        );
        assert.match((await metric(gw, /^oda_tokens_total\{kind="input"\}/)) ?? '', / 22$/);
        assert.match(waitingWhileDown ?? '', / 2$/, 'both answers waited to be recorded');
        await until('nothing left waiting', async () =>
          /\s0$/.test((await metric(gw, /^oda_answers_waiting_to_be_recorded /)) ?? ''),
        );
        assert.equal(await metric(gw, /^oda_answers_unrecorded_total\{/), undefined, 'nothing given up');
      } finally {
        await gw.close();
        await redis.stop();
      }
    });
  },
);

describe(
  "an answer whose chat's lock another replica held past the wait",
  { skip: redisSkip || (testStoreIsRedis && 'runs once, in the file-store pass') },
  () => {
    const prefix = uniquePrefix('unrecorded-lock');
    after(() => dropPrefix(prefix));

    test('is logged once the lock frees itself', async () => {
      const gw = await startGateway({
        config: { store: { kind: 'redis', url: redisUrl! } },
        deps: {
          // A wait shorter than the other replica's hold below.
          backend: new RedisLogBackend({ url: redisUrl!, prefix, lockTtlMs: 300, lockWaitMs: 300 }),
          unrecorded: { firstDelayMs: 100, maxDelayMs: 400 },
        },
      });
      const direct = new Redis(redisUrl!);
      await until(
        'the gateway connected to Redis',
        async () => (await fetch(`${gw.url}/readyz`)).status === 200,
      );
      try {
        let answer!: () => void;
        const answering = new Promise<void>((r) => (answer = r));
        gw.fake.script({ json: openaiCompletion('gpt-test', 'kept past the lock', 7), after: answering });
        const res = post(gw, 'locked', ask('answer me'));
        await until('the request at the provider', () => gw.fake.requests.length === 1);
        // Another replica holds the chat's lock longer than this one waits for it.
        await direct.set(`${prefix}chat:locked:lock`, 'another-replica', 'PX', 2000);
        answer();
        const got = await res;
        assert.equal(got.status, 200);
        assert.equal(
          ((await got.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message
            .content,
          'kept past the lock',
        );
        const logged = await eventsOnceAnswered(gw, 'locked');
        assert.equal(logged.filter((e) => e.type === 'response').length, 1, JSON.stringify(logged));
        assert.deepEqual(
          logged.filter((e) => e.type === 'message' && e.role === 'model').map((m) => textOf(m)),
          ['kept past the lock'],
        );
        const usage = (await (await fetch(`${gw.url}/v1/usage`)).json()) as { total: { answered: number } };
        assert.equal(usage.total.answered, 1);
      } finally {
        direct.disconnect();
        await gw.close();
      }
    });
  },
);
