/**
 * The bill per chat and team (SPEC section 11): the provider's usage of every answered call, by
 * kind, in the chat's `GET /v1/sessions/{id}` (`usage`, `savings`), summed per team and UTC day by
 * `GET /v1/usage` (a team sees its own, an admin everyone's), and counted in
 * `oda_tokens_total{kind}`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { newKey } from '../../server/cli-keys.ts';
import { loadOpenApi, validateResponse } from '../helpers/openapi-validator.ts';
import { openaiCompletion, openaiStream } from '../fake-provider/fake-bodies.ts';

const research = newKey();
const design = newKey();
const admin = newKey();

type Obj = Record<string, unknown>;

const doc = loadOpenApi();

/** A call with a team key; a GET's answer must match what openapi.yaml documents for it. */
async function call(gw: TestGateway, key: string, path: string, body?: unknown, headers: Obj = {}) {
  const anthropic = path === '/v1/messages';
  const res = await fetch(`${gw.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'content-type': 'application/json',
      ...(anthropic
        ? { 'x-api-key': key, 'anthropic-version': '2023-06-01' }
        : { authorization: `Bearer ${key}` }),
      ...(headers as Record<string, string>),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const answer = { status: res.status, headers: res.headers, body: (await res.json()) as Obj };
  if (body === undefined) {
    assert.deepEqual(validateResponse(doc, 'GET', path.split('?')[0]!, answer.status, answer.body), [], path);
  }
  return answer;
}

const anthropicAnswer = (usage: Obj) => ({
  json: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content: [{ type: 'text', text: 'ok' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage,
  },
});

describe('usage and savings per chat, team and day', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [
          { name: 'research', keys: [research.hash] },
          { name: 'design', keys: [design.hash] },
        ],
        adminKeys: [admin.hash],
      },
    });
    const ask = (text: string) => ({
      model: 'claude-test',
      max_tokens: 50,
      messages: [{ role: 'user', content: text }],
    });
    // research: two answered calls in one chat (a cache write, 1,500 of it to a one-hour cache,
    // then a read), and one refusal.
    gw.fake.script(
      anthropicAnswer({
        input_tokens: 100,
        cache_creation_input_tokens: 2000,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 500, ephemeral_1h_input_tokens: 1500 },
        output_tokens: 20,
      }),
    );
    assert.equal(
      (await call(gw, research.key, '/v1/messages', ask('one'), { 'x-session-id': 'acct' })).status,
      200,
    );
    gw.fake.script(
      anthropicAnswer({
        input_tokens: 30,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 2000,
        output_tokens: 10,
      }),
    );
    const two = {
      ...ask('one'),
      messages: [
        ...ask('one').messages,
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'two' },
      ],
    };
    assert.equal((await call(gw, research.key, '/v1/messages', two, { 'x-session-id': 'acct' })).status, 200);
    gw.fake.script({
      status: 400,
      json: { type: 'error', error: { type: 'invalid_request_error', message: 'bad' } },
    });
    assert.equal(
      (await call(gw, research.key, '/v1/messages', ask('three'), { 'x-session-id': 'acct-bad' })).status,
      400,
    );
    // design: one OpenAI call whose prompt tokens include 1000 cached ones.
    gw.fake.script({
      json: {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-test',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: 1500,
          completion_tokens: 7,
          total_tokens: 1507,
          prompt_tokens_details: { cached_tokens: 1000 },
        },
      },
    });
    const openai = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(
      (await call(gw, design.key, '/v1/chat/completions', openai, { 'x-session-id': 'acct' })).status,
      200,
    );
  });
  after(() => gw.close());

  test("a chat's usage by kind and its savings, beside its existing fields", async () => {
    const { status, body } = await call(gw, research.key, '/v1/sessions/acct');
    assert.equal(status, 200);
    assert.ok(body.header && body.snapshot, 'header and snapshot are still there');
    assert.deepEqual(body.usage, {
      answered: 2,
      inputTokens: 130,
      cacheWriteTokens: 2000,
      cacheWrite1hTokens: 1500,
      cacheReadTokens: 2000,
      outputTokens: 30,
    });
    assert.deepEqual((body.savings as Obj).total, { chars: 0, tokens: 0 });
    // OpenAI's prompt tokens include the cached ones: 500 are base input.
    const other = await call(gw, design.key, '/v1/sessions/acct');
    assert.deepEqual(other.body.usage, {
      answered: 1,
      inputTokens: 500,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 1000,
      outputTokens: 7,
    });
    const refused = await call(gw, research.key, '/v1/sessions/acct-bad');
    assert.equal((refused.body.usage as Obj).answered, 0);
  });

  test('GET /v1/usage: a team sees its own day', async () => {
    const { status, body } = await call(gw, research.key, '/v1/usage');
    assert.equal(status, 200);
    assert.equal(body.to, '2026-01-01');
    assert.equal(body.from, '2025-12-03');
    const days = body.days as Obj[];
    assert.equal(days.length, 1);
    assert.equal(days[0]!.day, '2026-01-01');
    assert.equal(days[0]!.team, 'research');
    assert.equal(days[0]!.answered, 2);
    assert.deepEqual(days[0]!.usage, {
      inputTokens: 130,
      cacheWriteTokens: 2000,
      cacheWrite1hTokens: 1500,
      cacheReadTokens: 2000,
      outputTokens: 30,
    });
    assert.deepEqual((body.total as Obj).usage, days[0]!.usage);

    const mine = await call(gw, research.key, '/v1/usage?team=research&from=2026-01-01&to=2026-01-01');
    assert.equal((mine.body.days as Obj[]).length, 1);
    const other = await call(gw, research.key, '/v1/usage?team=design');
    assert.equal(other.status, 403);
    assert.match(String((other.body.error as Obj).message), /^a team key sees only its own team's usage/);
  });

  test('GET /v1/usage: an admin sees every team, or the one it names', async () => {
    const all = await call(gw, admin.key, '/v1/usage?from=2026-01-01');
    assert.deepEqual(
      (all.body.days as Obj[]).map((d) => [d.day, d.team, d.answered]),
      [
        ['2026-01-01', 'design', 1],
        ['2026-01-01', 'research', 2],
      ],
    );
    assert.deepEqual((all.body.total as Obj).usage, {
      inputTokens: 630,
      cacheWriteTokens: 2000,
      cacheWrite1hTokens: 1500,
      cacheReadTokens: 3000,
      outputTokens: 37,
    });
    const one = await call(gw, admin.key, '/v1/usage?team=design');
    assert.deepEqual(
      (one.body.days as Obj[]).map((d) => d.team),
      ['design'],
    );
    const earlier = await call(gw, admin.key, '/v1/usage?from=2025-12-01&to=2025-12-31');
    assert.deepEqual(earlier.body.days, []);
  });

  test('GET /v1/usage: a bad query is a 400 naming the parameter', async () => {
    const cases: Array<[string, string]> = [
      ['from=2026-13-01', 'from'],
      ['to=yesterday', 'to'],
      ['from=2026-01-02&to=2026-01-01', 'from'],
      ['from=2020-01-01&to=2026-01-01', 'from'],
      ['team=a%20b', 'team'],
      ['days=3', 'query'],
    ];
    for (const [q, param] of cases) {
      const { status, body } = await call(gw, admin.key, `/v1/usage?${q}`);
      assert.equal(status, 400, q);
      const error = body.error as Obj;
      assert.match(String(error.message), new RegExp(`^${param}: `), q);
    }
  });

  test('oda_tokens_total counts billed tokens by kind', async () => {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const value = (kind: string) =>
      Number(new RegExp(`^oda_tokens_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    assert.equal(value('input'), 630);
    assert.equal(value('cache_write'), 2000);
    assert.equal(value('cache_write_1h'), 1500, 'the one-hour part of the writes');
    assert.equal(value('cache_read'), 3000);
    assert.equal(value('output'), 37);
  });
});

describe('a branch bills only its own calls', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test("the parent's answers it inherited stay on the parent's bill; the chats add up to the ledger", async () => {
    const answer = (i: number) =>
      anthropicAnswer({
        input_tokens: 100 * i,
        cache_creation_input_tokens: 10,
        cache_read_input_tokens: 1000,
        output_tokens: i,
      });
    const user = (text: string) => ({ role: 'user', content: text });
    const said = () => ({ role: 'assistant', content: 'ok' });
    const turns = [
      [user('q1')],
      [user('q1'), said(), user('q2')],
      [user('q1'), said(), user('q2'), said(), user('q3')],
      // The second question edited: a branch that shares the first turn.
      [user('q1'), said(), user('q2, edited')],
    ];
    const sessions: string[] = [];
    for (const [i, messages] of turns.entries()) {
      gw.fake.script(answer(i + 1));
      const res = await call(
        gw,
        'unused',
        '/v1/messages',
        { model: 'claude-test', max_tokens: 5, messages },
        { 'x-session-id': 'billed-branch' },
      );
      assert.equal(res.status, 200);
      sessions.push(res.headers.get('x-session-id') ?? '');
    }
    const branch = sessions[3]!;
    assert.notEqual(branch, 'billed-branch', 'the edit made a branch');
    const usageOf = async (id: string) =>
      (await call(gw, 'unused', `/v1/sessions/${encodeURIComponent(id)}`)).body.usage as Obj;
    const parent = await usageOf('billed-branch');
    const own = await usageOf(branch);
    assert.equal(parent.answered, 3);
    assert.equal(parent.inputTokens, 600);
    assert.equal(own.answered, 1, 'the branch answered one call');
    assert.equal(own.inputTokens, 400);
    assert.equal(own.cacheReadTokens, 1000);
    const ledger = (await call(gw, 'unused', '/v1/usage')).body.total as { answered: number; usage: Obj };
    assert.equal(ledger.answered, (parent.answered as number) + (own.answered as number));
    assert.equal(ledger.usage.inputTokens, (parent.inputTokens as number) + (own.inputTokens as number));
  });
});

describe("a compatible server's own cache count", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test("DeepSeek's prompt_cache_hit_tokens are billed as cache reads, streamed or not", async () => {
    // DeepSeek's usage: prompt_tokens = prompt_cache_hit_tokens + prompt_cache_miss_tokens.
    const usage = {
      prompt_tokens: 1500,
      completion_tokens: 7,
      total_tokens: 1507,
      prompt_cache_hit_tokens: 1280,
      prompt_cache_miss_tokens: 220,
    };
    gw.fake.script({ json: { ...openaiCompletion('deepseek-chat', 'ok'), usage } });
    const ask = { model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] };
    const res = await call(gw, 'unused', '/v1/chat/completions', ask, { 'x-session-id': 'deepseek-bill' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.usage, usage, 'the client gets the usage as sent');
    // The same usage on the stream's usage-only chunk, which the client asked for.
    const events = openaiStream('deepseek-chat', ['ok']);
    const usageChunk = events.findIndex((e) => e.data.includes('"choices":[]'));
    events[usageChunk] = { data: JSON.stringify({ ...JSON.parse(events[usageChunk]!.data), usage }) };
    gw.fake.script({ sse: events });
    const streamed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'deepseek-bill-2' },
      body: JSON.stringify({ ...ask, stream: true, stream_options: { include_usage: true } }),
    });
    assert.equal(streamed.status, 200);
    assert.ok(
      (await streamed.text()).includes('"prompt_cache_hit_tokens":1280'),
      'the usage chunk reached the client',
    );
    for (const id of ['deepseek-bill', 'deepseek-bill-2']) {
      const { body } = await call(gw, 'unused', `/v1/sessions/${id}`);
      assert.deepEqual(
        body.usage,
        {
          answered: 1,
          inputTokens: 220,
          cacheWriteTokens: 0,
          cacheWrite1hTokens: 0,
          cacheReadTokens: 1280,
          outputTokens: 7,
        },
        id,
      );
    }
  });
});
