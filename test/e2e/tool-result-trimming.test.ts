/**
 * Issue 4 end to end, for both wire formats: tool-result trimming at the compaction point and
 * after a context-overflow refusal (SPEC sections 3 and 5). The official SDKs talk to a real
 * gateway in front of the fake provider; every test checks what the client got and what the
 * provider received.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileLogBackend } from '../../chat-log/store-file.ts';
import { makePng } from '../../chat-log/test-images.ts';
import type { Event, NewEvent } from '../../chat-log/format/current.ts';
import { bodies } from '../fake-provider/fake-bodies.ts';
import type { FakeReply } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { dig, eventsOfType, sessionEvents, withReplaced } from '../helpers/session-events.ts';
import {
  callWithSdk,
  postRaw,
  sdkErrorBody,
  sdkErrorClass,
  sdkErrorStatus,
  streamWithSdk,
  UPSTREAM_PATH,
  type WireName,
} from '../helpers/wire-clients.ts';

/** Written out here, not imported: the test states the contract independently of the code. */
const MARKER = '\n\n[... tool result middle pruned ...]\n\n';
const HEAD = 4096;
const TAIL = 1024;
const ASTRAL = ['😀', '🧪', '𝄞', '🚀', '🦀'];
const ANSWER = 'Hello from the fake provider.';

/**
 * `n` code points of log-like text. Astral characters (surrogate pairs in UTF-16) sit on both
 * sides of both cut points (after the first 4096 code points and before the last 1024) and here
 * and there before them, so counting code units instead of code points would cut elsewhere.
 */
function astralToolText(n: number): string {
  const cps: string[] = [];
  for (let i = 0; i < n; i++) cps.push(i % 80 === 79 ? '\n' : String.fromCharCode(0x61 + (i % 26)));
  for (let i = 101; i < n - 2000; i += 997) cps[i] = ASTRAL[i % ASTRAL.length]!;
  for (const cut of [HEAD, n - TAIL]) {
    for (let i = cut - 5; i <= cut + 5; i++) cps[i] = ASTRAL[i % ASTRAL.length]!;
  }
  return cps.join('');
}

/**
 * The first 4096 code points, the marker, the last 1024 code points; `before` code points of the
 * result's text sit in text parts before this one and count towards the head.
 */
function expectedTrim(text: string, before = 0): string {
  const cps = Array.from(text);
  return cps.slice(0, HEAD - before).join('') + MARKER + cps.slice(-TAIL).join('');
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** One wire format's chat with a tool call and its result, and where things sit in it. */
interface WireCase {
  wire: WireName;
  /** A model whose context window the gateway does not know. */
  unknownModel: string;
  callId: string;
  toolTextPath: ReadonlyArray<string | number>;
  /** A chat whose first user message names the test (one chat per test), ending with a tool result. */
  chat(label: string, toolText: string, model?: string): Record<string, unknown>;
  /** The next turn: the answer as an assistant message, then a new user message. */
  nextTurn(body: Record<string, unknown>, answer: string, userText: string): Record<string, unknown>;
  overflowRefusal(): FakeReply;
  overflowMessage: RegExp;
}

const CASES: WireCase[] = [
  {
    wire: 'openai',
    unknownModel: 'mystery-model',
    callId: 'call_read_1',
    toolTextPath: ['messages', 3, 'content'],
    chat: (label, toolText, model = 'mystery-model') => ({
      model,
      messages: [
        { role: 'system', content: 'You read files for the user.' },
        { role: 'user', content: `[${label}] What does app.log say?` },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_read_1',
              type: 'function',
              function: { name: 'read_file', arguments: '{"path":"app.log"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_read_1', content: toolText },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'read_file',
            description: 'Read a file',
            parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          },
        },
      ],
      temperature: 0.25,
      x_client_extension: { keep: ['me', 1.5] },
    }),
    nextTurn: (body, answer, userText) => ({
      ...structuredClone(body),
      messages: [
        ...(structuredClone(body.messages) as unknown[]),
        { role: 'assistant', content: answer },
        { role: 'user', content: userText },
      ],
    }),
    overflowRefusal: () => ({ status: 400, json: bodies.openaiContextLength(128000, 135000) }),
    overflowMessage: /maximum context length is/,
  },
  {
    wire: 'anthropic',
    unknownModel: 'mystery-model',
    callId: 'toolu_read_1',
    toolTextPath: ['messages', 2, 'content', 0, 'content', 0, 'text'],
    chat: (label, toolText, model = 'mystery-model') => ({
      model,
      max_tokens: 256,
      system: [{ type: 'text', text: 'You read files for the user.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: `[${label}] What does app.log say?` },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Reading it.' },
            { type: 'tool_use', id: 'toolu_read_1', name: 'read_file', input: { path: 'app.log' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_read_1',
              content: [{ type: 'text', text: toolText }],
              cache_control: { type: 'ephemeral' },
            },
            { type: 'text', text: 'Summarise it.' },
          ],
        },
      ],
      tools: [
        {
          name: 'read_file',
          description: 'Read a file',
          input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        },
      ],
      temperature: 0.25,
    }),
    nextTurn: (body, answer, userText) => ({
      ...structuredClone(body),
      messages: [
        ...(structuredClone(body.messages) as unknown[]),
        { role: 'assistant', content: [{ type: 'text', text: answer }] },
        { role: 'user', content: userText },
      ],
    }),
    overflowRefusal: () => ({ status: 400, json: bodies.anthropicPromptTooLong(210000, 200000) }),
    overflowMessage: /prompt is too long/,
  },
];

/** The full text of the tool result with `callId` in the chat's logged messages. */
function loggedToolResultTexts(events: readonly Event[], callId: string): string[] {
  const texts: string[] = [];
  for (const m of eventsOfType(events, 'message')) {
    for (const part of m.content) {
      if (part.kind !== 'tool-result' || part.callId !== callId) continue;
      for (const c of part.content) if (c.kind === 'text') texts.push(c.text);
    }
  }
  return texts;
}

/**
 * A real file store whose disk "fills up" for decisions: appending a batch that holds a
 * `tool-result-trimmed` event fails. Fault injection at the storage boundary, nothing mocked.
 */
class FailingTrimBackend extends FileLogBackend {
  override async append(id: string, events: readonly NewEvent[], now: number): Promise<Event[]> {
    if (events.some((e) => e.type === 'tool-result-trimmed'))
      throw new Error('ENOSPC: no space left on device (injected)');
    return super.append(id, events, now);
  }
}

for (const wc of CASES) {
  const path = UPSTREAM_PATH[wc.wire];

  describe(`tool-result trimming over ${wc.wire} (official SDK)`, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({ config: { models: { 'small-*': { contextWindow: 8000 } } } });
    });
    after(() => gw.close());
    beforeEach(() => {
      gw.fake.reset();
      gw.fake.options = {};
      gw.sleeps.length = 0;
    });

    test('overflow refusal -> trimmed resend -> answer; the next turn sends the trimmed form from the start', async () => {
      const big = astralToolText(20_000);
      assert.equal(Array.from(big).length, 20_000);
      assert.ok(big.length > 20_000, 'the text holds surrogate pairs');
      const trimmed = expectedTrim(big);
      // Counting code units would have cut elsewhere: the contract is in code points.
      assert.notEqual(trimmed, big.slice(0, HEAD) + MARKER + big.slice(-TAIL));
      // The real overflow body: the fake refuses any messages JSON over 15,000 characters.
      gw.fake.options = { contextLimitChars: 15_000 };
      const body = wc.chat('overflow then trim', big);

      const got = await callWithSdk(wc.wire, gw, body);
      assert.equal(got.text, ANSWER);
      assert.equal(got.headers.get('x-oda-trimmed'), '1');

      const sent = gw.fake.requestsTo(path);
      assert.equal(sent.length, 2);
      assert.deepEqual(sent[0]!.json, body, 'the first attempt is the request as the client sent it');
      const resent = dig(sent[1]!.json, wc.toolTextPath);
      assert.equal(typeof resent, 'string');
      assert.equal(resent, trimmed);
      assert.ok(!LONE_SURROGATE.test(resent as string), 'no surrogate pair was split');
      assert.deepEqual(
        sent[1]!.json,
        withReplaced(body, wc.toolTextPath, trimmed),
        'everything else as the client sent it',
      );

      // The log keeps the full text and the decision.
      const events = await sessionEvents(gw.url, got.sessionId);
      assert.deepEqual(loggedToolResultTexts(events, wc.callId), [big]);
      const trims = eventsOfType(events, 'tool-result-trimmed');
      assert.equal(trims.length, 1);
      assert.deepEqual(
        {
          callId: trims[0]!.callId,
          part: trims[0]!.part,
          originalChars: trims[0]!.originalChars,
          headChars: trims[0]!.headChars,
          tailChars: trims[0]!.tailChars,
          digest: trims[0]!.digest,
          trigger: trims[0]!.trigger,
        },
        {
          callId: wc.callId,
          part: 0,
          originalChars: 20_000,
          headChars: HEAD,
          tailChars: TAIL,
          digest: sha256(big),
          trigger: 'overflow',
        },
      );

      // Next turn: the client resends its whole (untrimmed) history plus a new message.
      gw.fake.reset();
      const next = wc.nextTurn(body, got.text, 'And what should I fix first?');
      const second = await callWithSdk(wc.wire, gw, next);
      assert.equal(second.text, ANSWER);
      assert.equal(second.sessionId, got.sessionId, 'the same chat continues');
      const turn2 = gw.fake.requestsTo(path);
      assert.equal(turn2.length, 1, 'no refusal: the trimmed form went from the start');
      assert.equal(dig(turn2[0]!.json, wc.toolTextPath), trimmed);
      assert.deepEqual(turn2[0]!.json, withReplaced(next, wc.toolTextPath, trimmed));
      // Byte-identical on the wire: the earlier messages are the same bytes as the previous resend.
      const previousMessages = JSON.stringify(dig(sent[1]!.json, ['messages']));
      assert.ok(
        turn2[0]!.raw.includes(Buffer.from(previousMessages.slice(0, -1), 'utf8')),
        'the earlier messages, tool result included, are the same bytes as before',
      );
      // The log still holds exactly one copy of the full text and one decision for it.
      const after2 = await sessionEvents(gw.url, got.sessionId);
      assert.deepEqual(loggedToolResultTexts(after2, wc.callId), [big]);
      assert.equal(eventsOfType(after2, 'tool-result-trimmed').length, 1);
    });

    test('a request never refused and under the threshold is forwarded byte for byte', async () => {
      // Over thresholdChars (8192) but the chat is far from its window (and one model's is unknown).
      for (const [label, model, chars] of [
        ['never refused, unknown window', wc.unknownModel, 30_000],
        ['under the compaction threshold', 'small-model', 9_000],
      ] as const) {
        gw.fake.reset();
        const body = wc.chat(label, astralToolText(chars), model);
        // Hand-made bytes an SDK would not produce: indentation and an escaped character.
        const raw = JSON.stringify(body, null, 2).replace('What does', 'Qu\\u00e9 does');
        const res = await postRaw(wc.wire, gw, raw);
        assert.equal(res.status, 200, label);
        assert.equal(res.headers.get('x-oda-trimmed'), null, label);
        const sent = gw.fake.requestsTo(path);
        assert.equal(sent.length, 1, label);
        assert.ok(
          sent[0]!.raw.equals(Buffer.from(raw, 'utf8')),
          `${label}: the provider got the client's bytes`,
        );
        const events = await sessionEvents(gw.url, res.headers.get('x-session-id') ?? '');
        assert.equal(eventsOfType(events, 'tool-result-trimmed').length, 0, label);
      }
    });

    test('compaction threshold: a request over 0.8 of a known window is trimmed before it is sent', async () => {
      const big = astralToolText(30_000);
      // The estimate is ~7,500 tokens against 0.8 x 8,000 = 6,400.
      gw.fake.options = { contextLimitChars: 15_000 };
      const body = wc.chat('threshold', big, 'small-model');
      const got = await callWithSdk(wc.wire, gw, body);
      assert.equal(got.text, ANSWER);
      assert.equal(got.headers.get('x-oda-trimmed'), '1');
      const sent = gw.fake.requestsTo(path);
      assert.equal(sent.length, 1, 'trimmed before the first send: no refusal');
      assert.deepEqual(sent[0]!.json, withReplaced(body, wc.toolTextPath, expectedTrim(big)));
      const trims = eventsOfType(await sessionEvents(gw.url, got.sessionId), 'tool-result-trimmed');
      assert.equal(trims.length, 1);
      assert.equal(trims[0]!.trigger, 'threshold');
      assert.equal(trims[0]!.originalChars, 30_000);
    });

    test('a model with an unknown context window is not trimmed until the provider refuses', async () => {
      const big = astralToolText(30_000);
      const body = wc.chat('unknown window', big, wc.unknownModel);
      const first = await callWithSdk(wc.wire, gw, body);
      assert.equal(first.headers.get('x-oda-trimmed'), null);
      assert.deepEqual(gw.fake.requestsTo(path)[0]!.json, body);

      // Same request, this time refused: trimmed once, then answered.
      gw.fake.reset();
      gw.fake.script(wc.overflowRefusal());
      const second = await callWithSdk(wc.wire, gw, body, { 'x-session-id': 'unknown-window-refused' });
      assert.equal(second.text, ANSWER);
      assert.equal(second.headers.get('x-oda-trimmed'), '1');
      const sent = gw.fake.requestsTo(path);
      assert.equal(sent.length, 2);
      assert.deepEqual(sent[0]!.json, body);
      assert.equal(dig(sent[1]!.json, wc.toolTextPath), expectedTrim(big));
    });

    test('streamed: the overflow refusal comes before any byte, so the trimmed resend streams the answer', async () => {
      const big = astralToolText(20_000);
      gw.fake.options = { contextLimitChars: 15_000 };
      const body = wc.chat('streamed', big);
      const got = await streamWithSdk(wc.wire, gw, body);
      assert.equal(got.text, ANSWER);
      assert.equal(got.headers.get('x-oda-trimmed'), '1');
      const sent = gw.fake.requestsTo(path);
      assert.equal(sent.length, 2);
      // A Chat Completions stream also asks for its usage, which the client did not (SPEC section 11).
      const asked = wc.wire === 'openai' ? { stream_options: { include_usage: true } } : {};
      assert.deepEqual(
        sent[1]!.json,
        withReplaced({ ...body, stream: true, ...asked }, wc.toolTextPath, expectedTrim(big)),
      );
    });

    test('image set-aside and overflow trimming in one call, neither spending a retry', async () => {
      const png = (w: number) => makePng(w, 3).toString('base64');
      const big = astralToolText(20_000);
      gw.fake.options = { imageLimit: 1, contextLimitChars: 15_000 };
      const body = wc.chat('images and overflow', big);
      const messages = body.messages as Array<Record<string, unknown>>;
      const image = (data: string) =>
        wc.wire === 'openai'
          ? { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }
          : { type: 'image', source: { type: 'base64', media_type: 'image/png', data } };
      const firstUser = messages.findIndex((m) => m.role === 'user');
      messages[firstUser] = {
        role: 'user',
        content: [{ type: 'text', text: '[images and overflow] Look.' }, image(png(3)), image(png(4))],
      };
      const got = await callWithSdk(wc.wire, gw, body);
      assert.equal(got.text, ANSWER);
      assert.equal(got.headers.get('x-oda-images-set-aside'), '1');
      assert.equal(got.headers.get('x-oda-trimmed'), '1');
      const sent = gw.fake.requestsTo(path);
      assert.equal(sent.length, 3, 'refused for images, then for size, then answered');
      assert.equal(dig(sent[2]!.json, wc.toolTextPath), expectedTrim(big));
      assert.equal(dig(sent[2]!.json, ['messages', firstUser, 'content', 1, 'type']), 'text');
      assert.deepEqual(dig(sent[2]!.json, ['messages', firstUser, 'content', 2]), image(png(4)));
      assert.deepEqual(gw.sleeps, []);
    });

    test('bounded: a refusal after a full trim pass reaches the client, after exactly two requests', async () => {
      const big = astralToolText(20_000);
      // Too small even for the trimmed form.
      gw.fake.options = { contextLimitChars: 2_000 };
      const body = wc.chat('bounded', big);
      let caught: unknown;
      await assert.rejects(callWithSdk(wc.wire, gw, body), (e: unknown) => {
        caught = e;
        return e instanceof sdkErrorClass(wc.wire, 400) && wc.overflowMessage.test((e as Error).message);
      });
      assert.equal(sdkErrorStatus(caught), 400);
      const sent = gw.fake.requestsTo(path);
      assert.equal(sent.length, 2);
      assert.equal(dig(sent[1]!.json, wc.toolTextPath), expectedTrim(big));
      // The provider's body, unchanged.
      const size = JSON.stringify(dig(sent[1]!.json, ['messages'])).length;
      const expected =
        wc.wire === 'openai'
          ? bodies.openaiContextLength(500, Math.ceil(size / 4)).error
          : bodies.anthropicPromptTooLong(Math.ceil(size / 4), 500);
      assert.deepEqual(sdkErrorBody(caught), expected);
      assert.deepEqual(gw.sleeps, [], 'no transport retry was spent');
    });
  });

  describe(`tool-result trimming over ${wc.wire}: budgets and recording failures`, () => {
    test('with maxRetries 0 an overflow refusal still gets its trimmed resend', async () => {
      const gw = await startGateway({ config: { retries: { maxRetries: 0 } } });
      try {
        gw.fake.script(wc.overflowRefusal());
        const big = astralToolText(20_000);
        const body = wc.chat('no retry budget', big);
        const got = await callWithSdk(wc.wire, gw, body);
        assert.equal(got.text, ANSWER);
        assert.equal(got.headers.get('x-oda-trimmed'), '1');
        const sent = gw.fake.requestsTo(path);
        assert.equal(sent.length, 2);
        assert.equal(dig(sent[1]!.json, wc.toolTextPath), expectedTrim(big));
        assert.deepEqual(gw.sleeps, []);
      } finally {
        await gw.close();
      }
    });

    test('when the trim cannot be recorded the client gets a clear 5xx and the trimmed form is never sent', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'oda-trim-fail-'));
      const gw = await startGateway({
        dataDir,
        config: { models: { 'small-*': { contextWindow: 8000 } } },
        deps: { backend: new FailingTrimBackend({ dataDir }) },
      });
      try {
        const big = astralToolText(30_000);
        const check = (e: unknown) => {
          assert.ok(e instanceof sdkErrorClass(wc.wire, 500), `got ${String(e)}`);
          assert.equal(sdkErrorStatus(e), 500);
          const errBody = sdkErrorBody(e);
          if (wc.wire === 'openai') {
            assert.equal(dig(errBody, ['code']), 'ODA_ERR_LOG_WRITE');
            assert.match(String(dig(errBody, ['message'])), /could not record/);
          } else {
            assert.equal(dig(errBody, ['type']), 'error');
            assert.equal(dig(errBody, ['error', 'type']), 'api_error');
            assert.match(String(dig(errBody, ['error', 'message'])), /could not record/);
          }
          return true;
        };

        // Threshold trigger: the pass fails before anything goes upstream.
        await assert.rejects(
          callWithSdk(wc.wire, gw, wc.chat('record fails at threshold', big, 'small-model')),
          check,
        );
        assert.equal(gw.fake.requestsTo(path).length, 0, 'nothing was sent upstream');

        // Overflow trigger: the refused request went out; its trimmed resend never does.
        gw.fake.reset();
        gw.fake.script(wc.overflowRefusal());
        const body = wc.chat('record fails after overflow', big);
        await assert.rejects(
          callWithSdk(wc.wire, gw, body, { 'x-session-id': 'record-fails-overflow' }),
          check,
        );
        const sent = gw.fake.requestsTo(path);
        assert.equal(sent.length, 1, 'only the refused request went upstream');
        assert.deepEqual(sent[0]!.json, body);
        const events = await sessionEvents(gw.url, 'record-fails-overflow');
        assert.equal(eventsOfType(events, 'tool-result-trimmed').length, 0);
        assert.deepEqual(loggedToolResultTexts(events, wc.callId), [big]);
      } finally {
        await gw.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}

describe('tool-result trimming keeps the structure of a tool result', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.fake.reset();
    gw.fake.options = {};
  });

  test('openai: the text parts are measured as one text; the short first part and the call id stay', async () => {
    const big = astralToolText(12_000);
    const body = {
      model: 'mystery-model',
      messages: [
        { role: 'user', content: '[multi-part] Run the tests.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_tests', type: 'function', function: { name: 'run_tests', arguments: '{}' } },
          ],
        },
        {
          role: 'tool',
          tool_call_id: 'call_tests',
          content: [
            { type: 'text', text: 'exit code 1' },
            { type: 'text', text: big },
          ],
        },
      ],
    };
    gw.fake.script({ status: 400, json: bodies.openaiContextLength(128000, 135000) });
    const got = await callWithSdk('openai', gw, body);
    assert.equal(got.headers.get('x-oda-trimmed'), '1');
    const sent = gw.fake.requestsTo('/v1/chat/completions');
    assert.equal(sent.length, 2);
    // 'exit code 1' is the first 11 code points of the result's text: all in the head.
    assert.deepEqual(
      sent[1]!.json,
      withReplaced(body, ['messages', 2, 'content', 1, 'text'], expectedTrim(big, 11)),
    );
    const trims = eventsOfType(await sessionEvents(gw.url, got.sessionId), 'tool-result-trimmed');
    assert.deepEqual(
      trims.map((t) => [t.callId, t.part, t.originalChars, t.parts?.length]),
      [['call_tests', 0, 12_011, 2]],
    );
  });

  test('anthropic: text cut around an image that keeps its place; is_error and a string result kept', async () => {
    const big = astralToolText(12_000);
    const otherBig = astralToolText(9_000);
    const png = makePng(8, 6).toString('base64');
    const body = {
      model: 'mystery-model',
      max_tokens: 64,
      messages: [
        { role: 'user', content: '[structured] Take a screenshot and read the log.' },
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 'toolu_shot', name: 'screenshot', input: {} },
            { type: 'tool_use', id: 'toolu_log', name: 'read_file', input: { path: 'x.log' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_shot',
              is_error: true,
              content: [
                { type: 'text', text: 'partial capture' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
                { type: 'text', text: big },
              ],
            },
            { type: 'tool_result', tool_use_id: 'toolu_log', content: otherBig },
          ],
        },
      ],
    };
    gw.fake.script({ status: 400, json: bodies.anthropicPromptTooLong(210000, 200000) });
    const got = await callWithSdk('anthropic', gw, body);
    assert.equal(got.headers.get('x-oda-trimmed'), '2');
    const sent = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent.length, 2);
    // 'partial capture' (15 code points) and the text after the image are one text.
    const expected = withReplaced(
      withReplaced(body, ['messages', 2, 'content', 0, 'content', 2, 'text'], expectedTrim(big, 15)),
      ['messages', 2, 'content', 1, 'content'],
      expectedTrim(otherBig),
    );
    assert.deepEqual(sent[1]!.json, expected);
    const trims = eventsOfType(await sessionEvents(gw.url, got.sessionId), 'tool-result-trimmed');
    assert.deepEqual(
      trims.map((t) => [t.callId, t.part, t.originalChars]),
      [
        ['toolu_shot', 0, 12_015],
        ['toolu_log', 0, 9_000],
      ],
    );
  });
});
