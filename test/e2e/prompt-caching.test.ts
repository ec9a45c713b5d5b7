/**
 * Prompt caching for clients that ask for none, end to end (SPEC section 11): official SDKs ->
 * gateway -> fake provider. A request without `cache_control` (Anthropic) or `prompt_cache_key`
 * (OpenAI) reaches the provider with breakpoints or the chat id as key, and the answer says so in
 * `x-oda-prompt-caching`; what the client set itself goes through byte for byte.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { chatDriver, wireMessages, type ChatDriver } from '../helpers/sdk-chat-drivers.ts';

type Obj = Record<string, unknown>;
const MODEL = 'cache-test';
const EPHEMERAL = { type: 'ephemeral' };

/**
 * The Anthropic body without any `cache_control`, string contents as the one text block they stand
 * for: what the client sent, when only markers were added (a marker turns a string into a block).
 */
function withoutMarkers(body: Obj): unknown {
  const blocks = (v: unknown) => (typeof v === 'string' ? [{ type: 'text', text: v }] : v);
  const copy = JSON.parse(
    JSON.stringify(body, (k, v: unknown) => (k === 'cache_control' ? undefined : v)),
  ) as Obj;
  if (copy.system !== undefined) copy.system = blocks(copy.system);
  for (const m of wireMessages(copy)) m.content = blocks(m.content);
  return copy;
}

/** Last block of a wire message (a string content counts as one text block). */
function lastBlock(message: Obj | undefined): Obj | undefined {
  const content = message?.content;
  return Array.isArray(content) ? (content[content.length - 1] as Obj) : undefined;
}

/** A short agent chat: a task, one tool round trip, then the next user turn. */
async function agentTurns(driver: ChatDriver, gw: TestGateway) {
  driver.user('Fix the failing test.');
  gw.fake.script(driver.toolCallReply('call_1', 'read_file', { path: '/a.ts' }));
  const first = await driver.call();
  driver.toolResult('call_1', 'export const a = 1;');
  const second = await driver.call();
  driver.user('Now run it.');
  const third = await driver.call();
  return { first, second, third };
}

describe('prompt caching: Anthropic format', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { promptCaching: { mode: 'auto' } } });
  });
  after(() => gw.close());

  test('no markers: breakpoints on the last message, the previous turn and the system prompt', async () => {
    const driver = chatDriver('anthropic', gw.url, gw.fake, MODEL, {
      system: 'You fix code.',
      tools: ['read_file'],
      headers: { 'x-session-id': 'cache-a1' },
    });
    const { first, second, third } = await agentTurns(driver, gw);

    // First call: one message (the last message and the previous turn are the same), and the system prompt.
    assert.equal(first.headers.get('x-oda-prompt-caching'), 'breakpoints=2');
    assert.deepEqual(first.providerBody.system, [
      { type: 'text', text: 'You fix code.', cache_control: EPHEMERAL },
    ]);
    assert.deepEqual(wireMessages(first.providerBody)[0]!.content, [
      { type: 'text', text: 'Fix the failing test.', cache_control: EPHEMERAL },
    ]);

    // Mid tool loop: the tool result ends the prompt, the first user message ended the previous request.
    assert.equal(second.headers.get('x-oda-prompt-caching'), 'breakpoints=3');
    const m2 = wireMessages(second.providerBody);
    assert.deepEqual(lastBlock(m2[2])!.cache_control, EPHEMERAL);
    assert.equal(lastBlock(m2[2])!.type, 'tool_result');
    assert.deepEqual(lastBlock(m2[0])!.cache_control, EPHEMERAL);
    assert.equal(JSON.stringify(second.providerBody).match(/cache_control/g)?.length, 3);

    // The next user turn: markers follow the chat, the earlier ones are gone with the client's bytes.
    const m3 = wireMessages(third.providerBody);
    assert.deepEqual(lastBlock(m3[4])!.cache_control, EPHEMERAL);
    assert.deepEqual(lastBlock(m3[2])!.cache_control, EPHEMERAL);
    assert.equal(JSON.stringify(third.providerBody).match(/cache_control/g)?.length, 3);

    // Nothing else changed: the provider got the client's request plus the markers.
    for (const out of [first, second, third]) {
      assert.deepEqual(withoutMarkers(out.providerBody), withoutMarkers(JSON.parse(out.clientBody) as Obj));
      assert.equal(out.clientBody.includes('cache_control'), false);
    }
    // The log records the client's request settings, not the gateway's markers.
    const events = (await (await fetch(`${gw.url}/v1/sessions/cache-a1/events`)).json()) as {
      events: Array<{ type: string; settings?: Obj }>;
    };
    for (const e of events.events.filter((e) => e.type === 'request')) {
      assert.equal(JSON.stringify(e.settings).includes('cache_control'), false);
    }
  });

  test("the client's own markers: the request goes through byte for byte", async () => {
    const driver = chatDriver('anthropic', gw.url, gw.fake, MODEL, {
      anthropicSystem: [
        { type: 'text', text: 'You fix code.', cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
      tools: ['read_file'],
      headers: { 'x-session-id': 'cache-a2' },
    });
    const { first, second, third } = await agentTurns(driver, gw);
    for (const out of [first, second, third]) {
      assert.equal(out.provider.raw.toString('utf8'), out.clientBody);
      assert.equal(out.headers.get('x-oda-prompt-caching'), null);
    }
  });

  test("an edited body keeps the client's bytes around the edits, with a key repeated too", async () => {
    const send = async (text: string, session: string) => {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': session },
        body: text,
      });
      assert.equal(res.status, 200);
      const got = gw.fake.requestsTo('/v1/messages');
      return got[got.length - 1]!.raw.toString('utf8');
    };
    const body = {
      model: MODEL,
      max_tokens: 20,
      system: 'You fix code.',
      messages: [{ role: 'user', content: 'Hello ✂' }],
      metadata: { user_id: 'u-1' },
    };
    // Pretty-printed: the members the breakpoints did not touch keep their own spacing.
    const pretty = JSON.stringify(body, null, 2);
    const spliced = await send(pretty, 'cache-a4');
    const edited = JSON.parse(spliced) as Obj;
    assert.deepEqual(edited.system, [{ type: 'text', text: 'You fix code.', cache_control: EPHEMERAL }]);
    assert.ok(
      spliced.startsWith('{\n  "model": "cache-test",\n  "max_tokens": 20,\n  "system": [{'),
      spliced,
    );
    assert.ok(spliced.endsWith(`"metadata": {\n    "user_id": "u-1"\n  }\n}`), spliced);
    // A repeated key: the edit goes where the last copy stands (the copy JSON.parse keeps, and the
    // one the provider's parser keeps); the earlier copy and everything else are the client's bytes.
    const repeated = `{"system":"An old prompt.",${pretty.slice(1)}`;
    const both = await send(repeated, 'cache-a5');
    assert.equal(both, `{"system":"An old prompt.",${spliced.slice(1)}`);
    assert.deepEqual((JSON.parse(both) as Obj).system, edited.system);
  });

  test('streamed calls get the same breakpoints', async () => {
    const driver = chatDriver('anthropic', gw.url, gw.fake, MODEL, {
      headers: { 'x-session-id': 'cache-a3' },
    });
    driver.user('Hello');
    const out = await driver.call({ stream: true });
    assert.equal(out.headers.get('x-oda-prompt-caching'), 'breakpoints=1');
    assert.deepEqual(wireMessages(out.providerBody)[0]!.content, [
      { type: 'text', text: 'Hello', cache_control: EPHEMERAL },
    ]);
    assert.equal(out.providerBody.stream, true);
  });
});

describe('prompt caching: per provider', () => {
  let gw: TestGateway;
  let fake: FakeProvider;
  before(async () => {
    // One fake behind providers with settings of their own.
    fake = await new FakeProvider().start();
    const openai = (name: string, models: string[], promptCaching: Obj) =>
      ({ name, format: 'openai', baseUrl: `${fake.url}/v1`, models, promptCaching }) as const;
    gw = await startGateway({
      fakeProvider: fake,
      config: {
        promptCaching: { mode: 'auto' },
        providers: [
          openai('strict-openai', ['strict-*'], { cacheKey: false }),
          openai('quiet-openai', ['quiet-*'], { mode: 'off' }),
          {
            name: 'auto-anthropic',
            format: 'anthropic',
            baseUrl: fake.url,
            promptCaching: { style: 'automatic' },
          },
        ],
      },
    });
  });
  after(async () => {
    await gw.close();
    await fake.close();
  });

  test("style automatic: Anthropic's request-level cache_control, and no block marker", async () => {
    const driver = chatDriver('anthropic', gw.url, fake, 'auto-model', {
      system: 'Be brief.',
      headers: { 'x-session-id': 'cache-p1' },
    });
    driver.user('Hi');
    const out = await driver.call();
    assert.equal(out.headers.get('x-oda-prompt-caching'), 'automatic');
    assert.deepEqual(out.providerBody.cache_control, EPHEMERAL);
    assert.equal(JSON.stringify(out.providerBody).match(/cache_control/g)?.length, 1);
    assert.deepEqual(
      { ...out.providerBody, cache_control: undefined },
      { ...(JSON.parse(out.clientBody) as Obj), cache_control: undefined },
    );
  });

  test('a provider that does not accept prompt_cache_key, and one with prompt caching off, get the request as sent', async () => {
    for (const model of ['strict-model', 'quiet-model']) {
      const driver = chatDriver('openai', gw.url, fake, model, {
        headers: { 'x-session-id': `cache-${model}` },
      });
      driver.user('Hi');
      const out = await driver.call();
      assert.equal(out.provider.raw.toString('utf8'), out.clientBody, model);
      assert.equal(out.headers.get('x-oda-prompt-caching'), null);
    }
  });
});

describe('prompt caching: OpenAI format', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { promptCaching: { mode: 'auto' } } });
  });
  after(() => gw.close());

  test('no prompt_cache_key: the chat id is the key, on every call of the chat', async () => {
    const driver = chatDriver('openai', gw.url, gw.fake, MODEL, {
      system: 'You fix code.',
      tools: ['read_file'],
      headers: { 'x-session-id': 'cache-o1' },
    });
    const { first, second, third } = await agentTurns(driver, gw);
    for (const out of [first, second, third]) {
      assert.equal(out.headers.get('x-oda-prompt-caching'), 'key');
      assert.equal(out.headers.get('x-session-id'), 'cache-o1');
      assert.equal(out.providerBody.prompt_cache_key, 'cache-o1');
      assert.deepEqual(
        { ...out.providerBody, prompt_cache_key: undefined },
        {
          ...(JSON.parse(out.clientBody) as Obj),
          prompt_cache_key: undefined,
        },
      );
    }
  });

  test('a chat without x-session-id gets its derived chat id as the key', async () => {
    const driver = chatDriver('openai', gw.url, gw.fake, MODEL, { system: 'Derived.' });
    driver.user('Which chat am I?');
    const out = await driver.call();
    const chatId = out.headers.get('x-session-id');
    assert.ok(chatId);
    const key = String(out.providerBody.prompt_cache_key);
    if (chatId.length <= 64) assert.equal(key, chatId);
    else assert.match(key, /^oda:[0-9a-f]{60}$/);
  });

  test("a branch of the chat (a regenerated answer) keeps the chat's key: its prefix is the chat's", async () => {
    const send = async () => {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: 'Bearer sk-test',
          'x-session-id': 'cache-o4',
        },
        body: JSON.stringify({
          model: MODEL,
          messages: [
            { role: 'system', content: 'You fix code.' },
            { role: 'user', content: 'Write a haiku.' },
          ],
        }),
      });
      assert.equal(res.status, 200);
      await res.json();
      const got = gw.fake.requests[gw.fake.requests.length - 1]!;
      return { chat: res.headers.get('x-session-id'), key: got.json?.prompt_cache_key };
    };
    const first = await send();
    // The same history again a moment later: the client asks for another answer, logged as a branch.
    gw.clock.advance(1000);
    const again = await send();
    assert.equal(first.chat, 'cache-o4');
    assert.match(String(again.chat), /^cache-o4\.b[0-9a-f]{12}$/);
    assert.equal(first.key, 'cache-o4');
    assert.equal(again.key, 'cache-o4');
  });

  test("the client's own prompt_cache_key goes through byte for byte", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: 'Bearer sk-test',
        'x-session-id': 'cache-o2',
      },
      body: '{"model":"cache-test","prompt_cache_key":"mine",  "messages":[{"role":"user","content":"Hi"}]}',
    });
    assert.equal(res.status, 200);
    await res.json();
    assert.equal(res.headers.get('x-oda-prompt-caching'), null);
    const got = gw.fake.requests[gw.fake.requests.length - 1]!;
    assert.equal(
      got.raw.toString('utf8'),
      '{"model":"cache-test","prompt_cache_key":"mine",  "messages":[{"role":"user","content":"Hi"}]}',
    );
  });
});

describe('an empty prompt_cache_key', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { promptCaching: { mode: 'auto' } } });
  });
  after(() => gw.close());

  test('names no chat: two conversations are two chats of their own, and the key goes as sent', async () => {
    const chats: string[] = [];
    for (const [api, body] of [
      [
        '/v1/chat/completions',
        '{"model":"cache-test","prompt_cache_key":"","messages":[{"role":"user","content":"One"}]}',
      ],
      [
        '/v1/chat/completions',
        '{"model":"cache-test","prompt_cache_key":"","messages":[{"role":"user","content":"Two"}]}',
      ],
      ['/v1/responses', '{"model":"cache-test","prompt_cache_key":"","input":"Three"}'],
    ] as const) {
      const res = await fetch(`${gw.url}${api}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
        body,
      });
      assert.equal(res.status, 200);
      await res.json();
      chats.push(res.headers.get('x-session-id') ?? '');
      // The client's empty key is its own: not replaced, the body goes as sent.
      assert.equal(res.headers.get('x-oda-prompt-caching'), null);
      assert.equal(gw.fake.requests[gw.fake.requests.length - 1]!.raw.toString('utf8'), body);
    }
    // Derived ids, one chat per conversation; not `prompt-cache-key:` and branches of it.
    for (const chat of chats) assert.match(chat, /^chat-[0-9a-f]{32}$/);
    assert.equal(new Set(chats).size, 3);
  });

  test('an empty client session header names no chat either', async () => {
    const chats: string[] = [];
    for (const text of ['Four', 'Five']) {
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', session_id: '' },
        body: JSON.stringify({ model: 'cache-test', messages: [{ role: 'user', content: text }] }),
      });
      assert.equal(res.status, 200);
      await res.json();
      chats.push(res.headers.get('x-session-id') ?? '');
    }
    for (const chat of chats) assert.match(chat, /^chat-[0-9a-f]{32}$/);
    assert.equal(new Set(chats).size, 2);
  });
});
