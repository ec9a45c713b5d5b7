/**
 * Usage of streamed Chat Completions answers whose client did not ask for it (SPEC section 11),
 * end to end: the official openai SDK -> gateway -> fake provider, which answers as OpenAI does
 * (a stream's usage only when `stream_options.include_usage` asks, `usage: null` on the other
 * chunks). The gateway asks on the client's behalf, bills the answer (the chat's usage,
 * `GET /v1/usage`, `oda_tokens_total`) and keeps the usage-only chunk out of the client's stream;
 * a client that asked gets it as before; `providers[].streamUsage: off` sends the client's bytes;
 * a provider that refuses `stream_options` gets the request again without it and is left alone
 * from then on.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { Captured } from '../helpers/captured-log.ts';
import { createLogger } from '../../server/logger.ts';
import { newKey } from '../../server/cli-keys.ts';
import { openaiStream } from '../fake-provider/fake-bodies.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import type { UnknownFieldStyle } from '../fake-provider/fake-unknown-field.ts';

type Obj = Record<string, unknown>;

const team = newKey();
const PIECES = ['Hello', ' from', ' the', ' fake', ' provider.'];
const ANSWER = PIECES.join('');
/** The fake's usage for a stream of PIECES. */
const BILLED = {
  inputTokens: 10,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
  outputTokens: PIECES.length,
};
const NOTHING_BILLED = {
  inputTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  cacheReadTokens: 0,
  outputTokens: 0,
};

/** The stream as the fake sends it (`includeUsage` as the request asked), as SSE text. */
function fakeStreamText(model: string, includeUsage: boolean): string {
  return openaiStream(model, PIECES, includeUsage)
    .map((e) => `data: ${e.data}\n\n`)
    .join('');
}

/** What one streamed SDK call produced. */
interface Streamed {
  /** The bytes the SDK sent. */
  clientBody: string;
  status: number;
  headers: Headers;
  /** The stream's bytes as the client got them. */
  wire: string;
  chunks: OpenAI.Chat.Completions.ChatCompletionChunk[];
  text: string;
  /** The refusal's body, when the call was refused. */
  errorBody?: string;
}

/** One streamed Chat Completions call through the SDK, keeping the bytes both ways. */
async function stream(
  gw: TestGateway,
  session: string,
  params: Partial<ChatCompletionCreateParamsStreaming> = {},
  key = team.key,
): Promise<Streamed> {
  const seen: { body: string; res?: Response; wire?: Promise<string>; errorBody?: string } = { body: '' };
  const client = new OpenAI({
    baseURL: `${gw.url}/v1`,
    apiKey: key,
    maxRetries: 0,
    defaultHeaders: { 'x-session-id': session },
    fetch: async (input, init) => {
      seen.body = typeof init?.body === 'string' ? init.body : '';
      const res = await fetch(input, init);
      seen.res = res;
      if (res.status >= 400) {
        seen.errorBody = await res.clone().text();
        return res;
      }
      // The SDK reads one copy of the stream; the test keeps the other's bytes.
      const [sdk, kept] = res.body!.tee();
      seen.wire = new Response(kept).text();
      return new Response(sdk, { status: res.status, statusText: res.statusText, headers: res.headers });
    },
  });
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  let text = '';
  try {
    const s = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: `Hi from ${session}` }],
      stream: true,
      ...params,
    });
    for await (const chunk of s) {
      chunks.push(chunk);
      text += chunk.choices[0]?.delta.content ?? '';
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIError)) throw e;
  }
  assert.ok(seen.res, 'the SDK made no request');
  return {
    clientBody: seen.body,
    status: seen.res.status,
    headers: seen.res.headers,
    wire: seen.wire ? await seen.wire : '',
    chunks,
    text,
    ...(seen.errorBody !== undefined ? { errorBody: seen.errorBody } : {}),
  };
}

async function getJson(gw: TestGateway, path: string): Promise<Obj> {
  const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${team.key}` } });
  assert.equal(res.status, 200, path);
  return (await res.json()) as Obj;
}

/** A chat's `usage` in `GET /v1/sessions/{id}`. */
async function chatUsage(gw: TestGateway, session: string): Promise<Obj> {
  return (await getJson(gw, `/v1/sessions/${session}`)).usage as Obj;
}

/** The team's usage today in `GET /v1/usage`. */
async function teamUsage(gw: TestGateway): Promise<{ answered: number; usage: Obj }> {
  const days = (await getJson(gw, '/v1/usage')).days as Array<{ answered: number; usage: Obj }>;
  assert.equal(days.length, 1);
  return days[0]!;
}

/** A counter's value in `/metrics` (0 when the series is not there). */
async function metric(gw: TestGateway, series: string): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const escaped = series.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return Number(new RegExp(`^${escaped} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
}

/** The body the gateway sends for a client body without `stream_options`: the ask added last. */
const withAsk = (clientBody: string) => `${clientBody.slice(0, -1)},"stream_options":{"include_usage":true}}`;

function gatewayConfig(fake: FakeProvider, streamUsage?: 'auto' | 'off') {
  return {
    teams: [{ name: 'research', keys: [team.hash] }],
    providers: [
      {
        name: 'fake-openai',
        format: 'openai' as const,
        baseUrl: `${fake.url}/v1`,
        ...(streamUsage ? { streamUsage } : {}),
      },
    ],
  };
}

describe('a streamed Chat Completions call whose client did not ask for usage', () => {
  let gw: TestGateway;
  before(async () => {
    const fake = await new FakeProvider().start();
    gw = await startGateway({ fakeProvider: fake, config: gatewayConfig(fake) });
  });
  after(async () => {
    await gw.close();
    await gw.fake.close();
  });

  test('is billed: the chat, the team and oda_tokens_total count its tokens', async () => {
    const out = await stream(gw, 'unasked');
    assert.equal(out.status, 200);
    assert.equal(out.headers.get('x-oda-attempts'), '1');
    assert.deepEqual(await chatUsage(gw, 'unasked'), { answered: 1, ...BILLED });
    const day = await teamUsage(gw);
    assert.equal(day.answered, 1);
    assert.deepEqual(day.usage, BILLED);
    assert.equal(await metric(gw, 'oda_tokens_total{kind="input"}'), BILLED.inputTokens);
    assert.equal(await metric(gw, 'oda_tokens_total{kind="output"}'), BILLED.outputTokens);
    // The gateway asked for the usage, and changed nothing else of what the client sent.
    const [sent, ...more] = gw.fake.requestsTo('/v1/chat/completions');
    assert.equal(more.length, 0);
    assert.equal(out.clientBody.includes('stream_options'), false);
    assert.equal(sent!.raw.toString('utf8'), withAsk(out.clientBody));
    // The log keeps the client's request settings, and the usage the answer carried.
    const { events } = (await getJson(gw, '/v1/sessions/unasked/events?offset=0')) as {
      events: Array<{ type: string; settings?: Obj; usage?: Obj }>;
    };
    const request = events.find((e) => e.type === 'request');
    assert.deepEqual(request?.settings, { stream: true });
    assert.deepEqual(events.find((e) => e.type === 'response')?.usage, {
      inputTokens: BILLED.inputTokens,
      outputTokens: BILLED.outputTokens,
    });
  });

  test("the client's stream is the provider's without the usage-only chunk", async () => {
    const out = await stream(gw, 'unasked-wire');
    assert.equal(out.text, ANSWER);
    // Every chunk has its choice (many clients read choices[0] of each); none carries usage.
    assert.equal(out.chunks.length, PIECES.length + 2);
    for (const chunk of out.chunks) {
      assert.equal(chunk.choices.length, 1);
      assert.equal(chunk.usage, null);
    }
    // The provider's bytes, less that one event; the `usage: null` of the others stays.
    const provider = fakeStreamText('gpt-test', true);
    const usageEvent = provider.split('\n\n').find((e) => e.includes('"choices":[]'));
    assert.ok(usageEvent, 'the provider sent its usage-only chunk');
    assert.equal(out.wire, provider.replace(`${usageEvent}\n\n`, ''));
    assert.equal(out.wire.includes('"choices":[]'), false);
    assert.match(out.wire, /data: \[DONE\]\n\n$/);
  });

  test(
    'each chunk reaches the client as it arrives, not once the stream is over',
    { timeout: 20_000 },
    async () => {
      let release!: () => void;
      const until = new Promise<void>((resolve) => (release = resolve));
      gw.fake.script({ sse: openaiStream('gpt-test', PIECES, true), holdAfter: { events: 2, until } });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: team.key, maxRetries: 0 });
      const s = await client.chat.completions.create(
        { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-session-id': 'unasked-held' } },
      );
      let text = '';
      for await (const chunk of s) {
        text += chunk.choices[0]!.delta.content ?? '';
        // The provider sends the rest only once the client has had its first words.
        if (text === 'Hello') release();
      }
      assert.equal(text, ANSWER);
      assert.deepEqual(await chatUsage(gw, 'unasked-held'), { answered: 1, ...BILLED });
    },
  );

  test('a client that set include_usage: false is asked for too, its other options kept, and gets no usage', async () => {
    const out = await stream(gw, 'said-no', {
      stream_options: { include_usage: false, include_obfuscation: false },
    });
    assert.equal(out.text, ANSWER);
    assert.ok(out.chunks.every((c) => c.choices.length === 1));
    const sent = gw.fake.requestsTo('/v1/chat/completions').at(-1)!;
    assert.deepEqual(sent.json?.stream_options, { include_usage: true, include_obfuscation: false });
    // Only that value was written again.
    assert.equal(
      sent.raw.toString('utf8'),
      out.clientBody.replace('"include_usage":false', '"include_usage":true'),
    );
    assert.deepEqual(await chatUsage(gw, 'said-no'), { answered: 1, ...BILLED });
  });

  test('a client that asked gets its usage chunk as before, its body sent as it was', async () => {
    const out = await stream(gw, 'asked', { stream_options: { include_usage: true } });
    assert.equal(out.text, ANSWER);
    const sent = gw.fake.requestsTo('/v1/chat/completions').at(-1)!;
    assert.equal(sent.raw.toString('utf8'), out.clientBody);
    assert.equal(out.wire, fakeStreamText('gpt-test', true));
    const last = out.chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage?.prompt_tokens, BILLED.inputTokens);
    assert.deepEqual(await chatUsage(gw, 'asked'), { answered: 1, ...BILLED });
  });
});

describe('providers[].streamUsage: off', () => {
  let gw: TestGateway;
  before(async () => {
    const fake = await new FakeProvider().start();
    gw = await startGateway({ fakeProvider: fake, config: gatewayConfig(fake, 'off') });
  });
  after(async () => {
    await gw.close();
    await gw.fake.close();
  });

  test("the client's bytes go as sent, and the stream comes back as the provider sent it", async () => {
    const out = await stream(gw, 'off');
    assert.equal(out.status, 200);
    const [sent] = gw.fake.requestsTo('/v1/chat/completions');
    assert.equal(sent!.raw.toString('utf8'), out.clientBody);
    assert.equal(out.wire, fakeStreamText('gpt-test', false));
    assert.equal(out.text, ANSWER);
    // Nothing told the gateway the usage: answered, with no tokens.
    assert.deepEqual(await chatUsage(gw, 'off'), { answered: 1, ...NOTHING_BILLED });
  });
});

const REFUSING: Array<{ style: UnknownFieldStyle; status: number }> = [
  { style: 'openai', status: 400 },
  { style: 'fastapi', status: 422 },
];

for (const { style, status } of REFUSING) {
  describe(`a provider that refuses stream_options, answering like ${style}`, () => {
    let gw: TestGateway;
    const logs = new Captured();
    const warnings = () => logs.text.split('refuses stream_options').length - 1;
    before(async () => {
      const fake = await new FakeProvider({ refusesFields: { fields: ['stream_options'], style } }).start();
      gw = await startGateway({
        fakeProvider: fake,
        // No transport retry to spend: taking the ask out is not one.
        config: { ...gatewayConfig(fake), retries: { maxRetries: 0, initialDelayMs: 1, maxDelayMs: 4 } },
        deps: { logger: createLogger('warn', logs) },
      });
    });
    after(async () => {
      await gw.close();
      await gw.fake.close();
    });

    test("a refusal of the client's own stream options goes back as it was, and teaches nothing", async () => {
      const out = await stream(gw, 'own-options', { stream_options: { include_usage: false } });
      assert.equal(out.status, status);
      // The gateway's ask was refused, then the client's own options.
      const [asked, own, ...more] = gw.fake.requestsTo('/v1/chat/completions');
      assert.equal(more.length, 0);
      assert.deepEqual(asked!.json?.stream_options, { include_usage: true });
      assert.equal(own!.raw.toString('utf8'), out.clientBody);
      assert.equal(out.headers.get('x-oda-attempts'), '2');
      assert.match(out.errorBody ?? '', /stream_options/);
      assert.equal(warnings(), 0);
      gw.fake.reset();
    });

    test('the request goes again without the ask, once, no retry spent; the stream is intact', async () => {
      const out = await stream(gw, 'refused-1');
      assert.equal(out.status, 200);
      assert.equal(out.headers.get('x-oda-attempts'), '2');
      const [refused, resent, ...more] = gw.fake.requestsTo('/v1/chat/completions');
      assert.equal(more.length, 0);
      assert.equal(refused!.raw.toString('utf8'), withAsk(out.clientBody));
      assert.equal(resent!.raw.toString('utf8'), out.clientBody);
      assert.deepEqual(gw.sleeps, []);
      assert.equal(out.wire, fakeStreamText('gpt-test', false));
      assert.equal(out.text, ANSWER);
      assert.equal(await metric(gw, 'oda_repair_rounds_total{kind="stream-options-refused"}'), 2);
      assert.equal(warnings(), 1);
      assert.match(logs.text, /providers\[\]\.streamUsage: off/);
      assert.match(logs.text, /"provider":"fake-openai"/);
      gw.fake.reset();
    });

    test('later requests to it go without the ask at once', async () => {
      const out = await stream(gw, 'refused-2');
      assert.equal(out.status, 200);
      assert.equal(out.headers.get('x-oda-attempts'), '1');
      const [sent, ...more] = gw.fake.requestsTo('/v1/chat/completions');
      assert.equal(more.length, 0);
      assert.equal(sent!.raw.toString('utf8'), out.clientBody);
      assert.equal(out.text, ANSWER);
      assert.equal(warnings(), 1);
    });
  });
}
