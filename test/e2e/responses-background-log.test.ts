/**
 * The answers of background responses in the chat log (SPEC sections 6 and 9): a `background: true`
 * call is answered queued with no output, and its answer reaches the client through
 * `responses.retrieve`. The first retrieve that finds it finished logs it in the queued call's chat
 * as that call's answer (model messages, the response event's outcome and usage, the team's usage,
 * the owners of its items); later retrieves, concurrent ones and those of another replica log
 * nothing more. Through the official `openai` SDK, with teams, against the fake provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Event } from '../../chat-log/format/current.ts';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';
import { newKey } from '../../server/cli-keys.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';
import { redisCutProxy } from '../helpers/redis-cut-proxy.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../helpers/redis-test.ts';
import { startTeamsGateway, type TeamsGateway } from '../helpers/responses-teams.ts';
import { startGateway, testStoreIsRedis } from '../helpers/start-gateway.ts';

/** Every event of chat `id`, read with `key`. */
async function chatEvents(url: string, key: string, id: string): Promise<Event[]> {
  const res = await fetch(`${url}/v1/sessions/${encodeURIComponent(id)}/events`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(res.status, 200);
  return ((await res.json()) as { events: Event[] }).events;
}

function responses(events: readonly Event[]): Array<Extract<Event, { type: 'response' }>> {
  return events.filter((e): e is Extract<Event, { type: 'response' }> => e.type === 'response');
}

function modelTexts(events: readonly Event[]): string[] {
  return events
    .filter((e): e is Extract<Event, { type: 'message' }> => e.type === 'message' && e.role === 'model')
    .map((e) => e.content.map((p) => (p.kind === 'text' ? p.text : '')).join(''));
}

/** Retrieves `id` through `client` until it is no longer queued or running. */
async function pollDone(client: OpenAI, id: string) {
  let polled = await client.responses.retrieve(id);
  for (let i = 0; i < 5 && (polled.status === 'queued' || polled.status === 'in_progress'); i++) {
    polled = await client.responses.retrieve(id);
  }
  return polled;
}

describe('background answers are logged when retrieved', () => {
  let teams: TeamsGateway;
  before(async () => {
    teams = await startTeamsGateway();
  });
  after(() => teams.close());

  /** The chat the call with `x-session-id` header `sid` was logged in (the research team's key). */
  async function created(input: string, sid: string) {
    const { data, response } = await teams.research.responses
      .create({ model: 'gpt-5', input, background: true }, { headers: { 'x-session-id': sid } })
      .withResponse();
    return { queued: data, chatId: response.headers.get('x-session-id')! };
  }

  test('the finished answer is logged once in the queued call’s chat, with its usage and items', async () => {
    const { gw, research } = teams;
    gw.fake.script({ responses: { output: [responsesMessage('the long answer', 'msg_bg_done')] } });
    const { queued, chatId } = await created('a long job', 'bg-chat');
    assert.equal(queued.status, 'queued');
    const adminKey = teams.admin.apiKey!;
    const before = await chatEvents(gw.url, adminKey, chatId);
    assert.deepEqual(
      responses(before).map((e) => e.stopReason),
      ['queued'],
    );
    assert.deepEqual(modelTexts(before), []);

    const done = await pollDone(research, queued.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.output_text, 'the long answer');

    const events = await chatEvents(gw.url, adminKey, chatId);
    assert.deepEqual(modelTexts(events), ['the long answer']);
    const logged = responses(events);
    assert.deepEqual(
      logged.map((e) => [e.stopReason, e.ok, e.responseId]),
      [
        ['queued', true, queued.id],
        ['completed', true, queued.id],
      ],
    );
    const finished = logged[1]!;
    assert.equal(finished.requestId, logged[0]!.requestId, 'the answer of the queued call');
    assert.equal(finished.usage?.outputTokens, done.usage?.output_tokens);
    assert.ok((done.usage?.output_tokens ?? 0) > 0);
    // The model message stands right before its response event, as a call's answer does.
    assert.equal(events.at(-1)!.type, 'response');
    assert.equal(events.at(-2)!.type, 'message');

    // The session's totals and the team's usage hold the answer's tokens.
    const session = (await (
      await fetch(`${gw.url}/v1/sessions/${chatId}`, { headers: { authorization: `Bearer ${adminKey}` } })
    ).json()) as { snapshot: { values: { totals: { outputTokens: number } } } };
    assert.equal(session.snapshot.values.totals.outputTokens, done.usage?.output_tokens);

    // Retrieved again: nothing more is logged.
    assert.equal((await research.responses.retrieve(queued.id)).status, 'completed');
    assert.equal((await chatEvents(gw.url, adminKey, chatId)).length, events.length);

    // The team reaches its background output by reference, as an answer's items.
    const referenced = await research.responses.create({
      model: 'gpt-5',
      input: [{ type: 'item_reference', id: 'msg_bg_done' }],
    });
    assert.equal(referenced.status, 'completed');

    // The client sends the history back with the background answer: the same chat, no branch.
    const next = await research.responses
      .create(
        {
          model: 'gpt-5',
          input: [
            { role: 'user', content: 'a long job' },
            { role: 'assistant', content: 'the long answer' },
            { role: 'user', content: 'thanks; and now?' },
          ],
        },
        { headers: { 'x-session-id': 'bg-chat' } },
      )
      .withResponse();
    assert.equal(next.response.headers.get('x-session-id'), chatId);
  });

  test('the team’s usage counts the background answer’s tokens, and the call once', async () => {
    const { gw, research } = teams;
    const usage = async () =>
      (await (
        await fetch(`${gw.url}/v1/usage`, {
          headers: { authorization: `Bearer ${research.apiKey!}` },
        })
      ).json()) as { total: { answered: number; usage: { outputTokens: number } } };
    const start = await usage();
    gw.fake.script({ responses: { output: [responsesMessage('counted', 'msg_bg_counted')] } });
    const { queued } = await created('count me', 'bg-usage');
    const done = await pollDone(research, queued.id);
    await research.responses.retrieve(queued.id);
    const end = await usage();
    assert.equal(end.total.answered - start.total.answered, 1, 'one call, one answer');
    assert.equal(end.total.usage.outputTokens - start.total.usage.outputTokens, done.usage?.output_tokens);
  });

  test('a cancelled background response is logged as a failed answer, once', async () => {
    const { gw, research } = teams;
    const adminKey = teams.admin.apiKey!;
    const { queued, chatId } = await created('never mind', 'bg-cancel');
    assert.equal((await research.responses.cancel(queued.id)).status, 'cancelled');
    // The cancel is forwarded as it is; the retrieve that sees it cancelled logs it.
    assert.equal((await research.responses.retrieve(queued.id)).status, 'cancelled');
    assert.equal((await research.responses.retrieve(queued.id)).status, 'cancelled');
    const logged = responses(await chatEvents(gw.url, adminKey, chatId));
    assert.deepEqual(
      logged.map((e) => [e.stopReason, e.ok]),
      [
        ['queued', true],
        ['cancelled', false],
      ],
    );
    assert.match(logged[1]!.error ?? '', /cancelled/);
  });

  test('concurrent retrieves of a finished answer log it once', async () => {
    const { gw, research } = teams;
    const adminKey = teams.admin.apiKey!;
    gw.fake.script({ responses: { output: [responsesMessage('raced', 'msg_bg_raced')] } });
    const { queued, chatId } = await created('race me', 'bg-race');
    const all = await Promise.all([1, 2, 3, 4].map(() => research.responses.retrieve(queued.id)));
    assert.ok(all.every((r) => r.status === 'completed'));
    const events = await chatEvents(gw.url, adminKey, chatId);
    assert.deepEqual(modelTexts(events), ['raced']);
    assert.equal(responses(events).length, 2);
  });
});

describe('background answers on two replicas sharing one Redis', { skip: redisSkip }, () => {
  test('retrieves on both replicas at once log the answer once', async () => {
    const prefix = uniquePrefix('bg-replicas');
    const fake = await new FakeProvider().start();
    const research = newKey();
    const config = {
      providers: [
        { name: 'fake-openai', format: 'openai' as const, baseUrl: `${fake.url}/v1`, apiKey: 'sk-gateway' },
      ],
      teams: [{ name: 'research', keys: [research.hash] }],
      adminKeys: [keys.admin.hash],
    };
    const replica = () =>
      startGateway({
        fakeProvider: fake,
        config,
        deps: { backend: new RedisLogBackend({ url: redisUrl!, prefix }) },
      });
    const [a, b] = [await replica(), await replica()];
    try {
      const client = (url: string) =>
        new OpenAI({ baseURL: `${url}/v1`, apiKey: research.key, maxRetries: 0 });
      fake.script({ responses: { output: [responsesMessage('one log', 'msg_bg_replicas')] } });
      const { data: queued, response } = await client(a.url)
        .responses.create({ model: 'gpt-5', input: 'two replicas', background: true })
        .withResponse();
      const chatId = response.headers.get('x-session-id')!;
      const done = await Promise.all([a, b, a, b].map((gw) => client(gw.url).responses.retrieve(queued.id)));
      assert.ok(done.every((r) => r.status === 'completed'));
      for (const gw of [a, b]) {
        const events = await chatEvents(gw.url, keys.admin.key, chatId);
        assert.deepEqual(modelTexts(events), ['one log']);
        assert.deepEqual(
          responses(events).map((e) => e.stopReason),
          ['queued', 'completed'],
        );
      }
    } finally {
      await a.close();
      await b.close();
      await fake.close();
      await dropPrefix(prefix);
    }
  });
});

describe(
  'a background answer whose append lost its reply',
  {
    skip: redisSkip || (testStoreIsRedis && 'runs once, in the file-store pass'),
  },
  () => {
    test('the try again finds it logged and still counts its tokens, once', { timeout: 30_000 }, async () => {
      const proxy = await redisCutProxy(redisUrl!);
      const prefix = uniquePrefix('bg-lost-reply');
      const gw = await startGateway({
        deps: {
          backend: new RedisLogBackend({ url: proxy.url, prefix, readyWaitMs: 300 }),
          unrecorded: { firstDelayMs: 50, maxDelayMs: 400 },
        },
      });
      try {
        const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
        const usage = async () =>
          (
            (await (await fetch(`${gw.url}/v1/usage`)).json()) as {
              total: { usage: { outputTokens: number } };
            }
          ).total.usage.outputTokens;
        const waiting = async () =>
          /^oda_answers_waiting_to_be_recorded (\d+)$/m.exec(
            await (await fetch(`${gw.url}/metrics`)).text(),
          )?.[1];
        const start = await usage();
        gw.fake.script({ responses: { output: [responsesMessage('lost reply', 'msg_bg_lost')] } });
        const { data: queued, response } = await client.responses
          .create({ model: 'gpt-5', input: 'lose the reply', background: true })
          .withResponse();
        const chatId = response.headers.get('x-session-id')!;
        // Redis runs the append of the answer; its reply is lost, and Redis is out of reach a while.
        const cut = proxy.cutOn((c) => c.includes('RPUSH') && c.includes('"text":"lost reply"'), {
          thenRefuse: true,
        });
        const done = await client.responses.retrieve(queued.id);
        assert.equal(done.status, 'completed');
        await cut;
        proxy.accept();
        for (const end = Date.now() + 20_000; (await waiting()) !== '0';) {
          assert.ok(Date.now() < end, 'the record waited too long');
          await new Promise((r) => setTimeout(r, 50));
        }
        const events = await chatEvents(gw.url, 'sk-client', chatId);
        assert.deepEqual(modelTexts(events), ['lost reply']);
        assert.deepEqual(
          responses(events).map((e) => e.stopReason),
          ['queued', 'completed'],
        );
        assert.ok((done.usage?.output_tokens ?? 0) > 0);
        assert.equal((await usage()) - start, done.usage?.output_tokens, 'the answer’s tokens counted');
      } finally {
        await gw.close();
        await proxy.close();
        await dropPrefix(prefix);
      }
    });
  },
);

const keys = { admin: newKey() };
