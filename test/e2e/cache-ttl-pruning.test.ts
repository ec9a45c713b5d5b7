/**
 * Cache-TTL pruning end to end (SPEC section 4, issue 6): official SDKs -> gateway -> fake
 * provider, both wire formats. The injected clock drives the TTL; every assertion compares what the
 * client sent with what the provider received.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makePng } from '../../chat-log/test-images.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import {
  bigText,
  chatDriver,
  contentText,
  getEvents,
  getSession,
  ofType,
  wireMessages,
  wireToolResults,
  type CallOutcome,
  type ChatDriver,
  type Format,
} from '../helpers/sdk-chat-drivers.ts';
import { softTrimmed } from '../helpers/soft-trimmed.ts';

const MODEL = 'small-model';
const WINDOW = 50_000; // tokens
const MINUTE = 60_000;
const TTL = 5 * MINUTE;
const RESULT_CHARS = 10_000;
const TOOL_CALLS = 12;
const CLEARED = '[Old tool result content cleared]';
const formats: Format[] = ['openai', 'anthropic'];

const resultText = (i: number) => bigText(`file ${i}`, RESULT_CHARS);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * SPEC section 4's size estimate over a wire body, computed here independently: characters of the
 * messages (text, tool-call arguments, tool-result text; ASCII only in these tests) / 4, rounded up;
 * the system prompt and tool definitions are left out.
 */
function estimateTokens(format: Format, body: Obj): number {
  let chars = 0;
  const text = (content: unknown) => {
    if (typeof content === 'string') chars += content.length;
    else if (Array.isArray(content)) {
      for (const p of content) {
        if (!isObj(p)) continue;
        if (p.type === 'text' && typeof p.text === 'string') chars += p.text.length;
        if (p.type === 'tool_use') chars += JSON.stringify(p.input ?? {}).length;
        if (p.type === 'tool_result') text(p.content);
      }
    }
  };
  for (const m of wireMessages(body)) {
    if (format === 'openai' && m.role === 'system') continue;
    text(m.content);
    if (Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls)
        if (isObj(c) && isObj(c.function)) chars += String(c.function.arguments).length;
    }
  }
  return Math.ceil(chars / 4);
}

function prunedHeader(out: CallOutcome): string | null {
  return out.headers.get('x-oda-pruned');
}

/** Provider bytes equal the client's bytes: nothing was changed. */
function assertUntouched(out: CallOutcome, why: string): void {
  assert.equal(prunedHeader(out), null, `${why}: no x-oda-pruned header`);
  assert.equal(out.provider.raw.toString('utf8'), out.clientBody, `${why}: provider bytes == client bytes`);
}

interface AgentChat {
  driver: ChatDriver;
  sessionId: string;
  /** Call ids of the twelve tool calls, oldest first. */
  callIds: string[];
  /** Call id of a tool result before the first user message (OpenAI only), if any. */
  preambleId: string | undefined;
  /** A long pasted user message (plain text). */
  paste: string;
}

let chatCounter = 0;

/**
 * An agent chat grown call by call inside the TTL (the clock never moves): the user asks, the model
 * calls `read_file` twelve times (each result 10,000 characters), then answers. Every call is
 * checked to be forwarded untouched. For OpenAI the history opens with a tool call and result
 * before the first user message, as agents that replay a preamble do.
 */
async function growAgentChat(gw: TestGateway, format: Format): Promise<AgentChat> {
  const sessionId = `prune-${format}-${++chatCounter}`;
  const driver = chatDriver(format, gw.url, gw.fake, MODEL, {
    system: 'You are a careful code reviewer.',
    tools: ['read_file'],
    headers: { 'x-session-id': sessionId },
  });
  let preambleId: string | undefined;
  if (format === 'openai') {
    preambleId = 'call_preamble';
    driver.assistantToolCall(preambleId, 'read_file', { path: '/AGENTS.md' });
    driver.toolResult(preambleId, bigText('preamble', RESULT_CHARS));
  }
  const paste = bigText('pasted log', 6000);
  driver.user(`Investigate the repository. Here is the log I saw:\n${paste}`);
  const callIds: string[] = [];
  for (let i = 0; i < TOOL_CALLS; i++) {
    gw.fake.script(driver.toolCallReply(`call_${i}`, 'read_file', { path: `/src/f${i}.ts` }));
    const out = await driver.call();
    assertUntouched(out, `tool call ${i} inside the ttl`);
    const call = out.toolCalls[0];
    assert.ok(call, `the client got tool call ${i}`);
    callIds.push(call.id);
    driver.toolResult(call.id, resultText(i));
  }
  const final = await driver.call();
  assert.equal(final.answerText, 'Hello from the fake provider.');
  assertUntouched(final, 'the answer after the tool loop, inside the ttl');
  // The chat is well over the soft-trim ratio: only the warm cache kept it whole.
  assert.ok(estimateTokens(format, final.providerBody) / WINDOW > 0.6);
  return { driver, sessionId, callIds, preambleId, paste };
}

/** Every wire message other than the listed tool results is byte-identical between client and provider. */
function assertOnlyToolResultsChanged(format: Format, out: CallOutcome, changed: ReadonlySet<string>): void {
  const client = JSON.parse(out.clientBody) as Obj;
  const sent = wireMessages(client);
  const got = wireMessages(out.providerBody);
  assert.equal(got.length, sent.length);
  sent.forEach((m, i) => {
    const g = got[i]!;
    if (format === 'openai' && m.role === 'tool' && changed.has(String(m.tool_call_id))) {
      assert.deepEqual({ ...g, content: null }, { ...m, content: null });
      return;
    }
    if (format === 'anthropic' && m.role === 'user' && Array.isArray(m.content) && Array.isArray(g.content)) {
      const gc = g.content as unknown[];
      assert.equal(gc.length, m.content.length);
      m.content.forEach((b: unknown, j) => {
        if (isObj(b) && b.type === 'tool_result' && changed.has(String(b.tool_use_id))) {
          assert.deepEqual({ ...(gc[j] as Obj), content: null }, { ...b, content: null });
        } else {
          assert.equal(JSON.stringify(gc[j]), JSON.stringify(b), `message ${i} block ${j} unchanged`);
        }
      });
      return;
    }
    assert.equal(JSON.stringify(g), JSON.stringify(m), `message ${i} (${String(m.role)}) unchanged`);
  });
  // Everything outside the messages too: system prompt, tools, settings.
  assert.deepEqual({ ...out.providerBody, messages: null }, { ...client, messages: null });
}

describe('cache-TTL pruning through the gateway (soft trim)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        models: { 'small-*': { contextWindow: WINDOW } },
        // chunkImages 0: the image replay window moves for any image behind it, warm cache or not.
        pruning: { mode: 'cache-ttl', ttl: '5m', imageReplay: { chunkImages: 0 } },
      },
    });
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: untouched inside the ttl; pruned once it expires; the projection is sticky`, async () => {
      const chat = await growAgentChat(gw, format);
      const { driver, sessionId, callIds } = chat;
      const touched = gw.clock.now();
      let session = await getSession(gw.url, sessionId);
      assert.deepEqual(session.snapshot.values['cache-clock'], {
        lastCacheTouchAt: touched,
        lastPruning: null,
      });

      // Four minutes later the cache is still warm: untouched again, and the clock moves on.
      gw.clock.advance(4 * MINUTE);
      driver.user('Which file is the entry point?');
      assertUntouched(await driver.call(), '4 minutes after the last call');

      // Past the ttl: the pass runs.
      gw.clock.advance(TTL + 1);
      driver.user('Summarize what you found.');
      const passAt = gw.clock.now();
      const pruned = await driver.call();
      assert.equal(pruned.answerText, 'Hello from the fake provider.');
      // The last 3 assistant messages are tool call 11, the answer after the loop and the answer to
      // the 4-minute question: results 0-10 lie before the 3rd last one, result 11 inside.
      const prunable = callIds.slice(0, 11);
      assert.equal(prunedHeader(pruned), `soft=${prunable.length},cleared=0`);
      const results = wireToolResults(pruned.providerBody);
      prunable.forEach((id, i) =>
        assert.equal(contentText(results.get(id)), softTrimmed(resultText(i)), `result ${i} soft-trimmed`),
      );
      assert.equal(
        contentText(results.get(callIds[11]!)),
        resultText(11),
        'the result in the last 3 assistant turns untouched',
      );
      if (chat.preambleId) {
        assert.equal(
          contentText(results.get(chat.preambleId)),
          bigText('preamble', RESULT_CHARS),
          'before the first user message untouched',
        );
      }
      assertOnlyToolResultsChanged(format, pruned, new Set(prunable));
      assert.ok(
        pruned.provider.raw.toString('utf8').includes(JSON.stringify(chat.paste).slice(1, -1)),
        'plain text is never changed',
      );

      // The session shows the clock (reset by the pass and then by the call, both at its start) and the pass.
      session = await getSession(gw.url, sessionId);
      const clockView = session.snapshot.values['cache-clock'] as {
        lastCacheTouchAt: number;
        lastPruning: Record<string, unknown>;
      };
      assert.equal(clockView.lastCacheTouchAt, passAt);
      const before = estimateTokens(format, JSON.parse(pruned.clientBody) as Obj);
      const afterPass = estimateTokens(format, pruned.providerBody);
      assert.deepEqual(clockView.lastPruning, {
        at: passAt,
        soft: 11,
        cleared: 0,
        charsRemoved: prunable.length * (RESULT_CHARS - softTrimmed(resultText(0)).length),
        estimateBefore: before,
        estimateAfter: afterPass,
        changed: true,
      });
      let events = await getEvents(gw.url, sessionId);
      const passes = ofType(events, 'pruning');
      assert.equal(passes.length, 1);
      assert.deepEqual(
        passes[0]!.projection.map((e) => [e.callId, e.action]),
        prunable.map((id) => [id, 'soft']),
      );
      // The log keeps the full results.
      const logged = ofType(events, 'message').flatMap((m) =>
        m.content.flatMap((c) => (c.kind === 'tool-result' ? [c] : [])),
      );
      assert.deepEqual(
        logged
          .filter((r) => prunable.includes(r.callId))
          .map((r) => (r.content[0]?.kind === 'text' ? r.content[0].text.length : -1)),
        prunable.map(() => RESULT_CHARS),
      );

      // Within the ttl again: the client resends the same history and one new turn; the provider
      // gets the very same tool-result bytes (sticky projection) and no new pass runs.
      gw.clock.advance(2 * MINUTE);
      driver.user('And the tests?');
      const sticky = await driver.call();
      assert.equal(prunedHeader(sticky), null);
      const stickyResults = wireToolResults(sticky.providerBody);
      for (const id of [...callIds, ...(chat.preambleId ? [chat.preambleId] : [])]) {
        assert.equal(
          JSON.stringify(stickyResults.get(id)),
          JSON.stringify(results.get(id)),
          `${id} byte-identical`,
        );
      }
      // The pruned request's messages are a byte-identical prefix of this one's (the cache prefix holds).
      const prunedMessages = JSON.stringify(wireMessages(pruned.providerBody)).slice(0, -1);
      assert.ok(JSON.stringify(wireMessages(sticky.providerBody)).startsWith(prunedMessages));
      events = await getEvents(gw.url, sessionId);
      assert.equal(ofType(events, 'pruning').length, 1, 'no new pass inside the ttl');
    });

    test(`${format}: a first request with no cache clock yet is pruned when over the ratio, not under it`, async () => {
      // A client resuming a long conversation elsewhere: the whole history arrives at once.
      const driver = chatDriver(format, gw.url, gw.fake, MODEL, {
        headers: { 'x-session-id': `first-${format}` },
      });
      driver.user('Read everything.');
      for (let i = 0; i < 6; i++) {
        driver.assistantToolCall(`call_first_${i}`, 'read_file', { path: `/f${i}` });
        driver.toolResult(`call_first_${i}`, resultText(i));
      }
      driver.assistantText('Read them all.');
      driver.user('Now explain.');
      const first = await driver.call();
      // The last 3 assistant messages are calls 4, 5 and the answer: results 0-3 are prunable.
      assert.equal(prunedHeader(first), 'soft=4,cleared=0');
      const results = wireToolResults(first.providerBody);
      for (let i = 0; i < 6; i++) {
        assert.equal(
          contentText(results.get(`call_first_${i}`)),
          i < 4 ? softTrimmed(resultText(i)) : resultText(i),
        );
      }
      const session = await getSession(gw.url, `first-${format}`);
      const clockView = session.snapshot.values['cache-clock'] as { lastPruning: { soft: number } | null };
      assert.equal(clockView.lastPruning?.soft, 4);

      // Under the ratio, a first request is left alone even with no clock.
      const small = chatDriver(format, gw.url, gw.fake, MODEL, {
        headers: { 'x-session-id': `first-small-${format}` },
      });
      small.user('Read one.');
      for (let i = 0; i < 4; i++) {
        small.assistantToolCall(`call_small_${i}`, 'read_file', { path: `/f${i}` });
        small.toolResult(`call_small_${i}`, bigText(`small ${i}`, 5000));
      }
      small.assistantText('Done.');
      small.user('Explain.');
      const under = await small.call();
      assert.ok(estimateTokens(format, under.providerBody) / WINDOW < 0.3);
      assertUntouched(under, 'under softTrimRatio');
      assert.equal(ofType(await getEvents(gw.url, `first-small-${format}`), 'pruning').length, 0);
    });

    test(`${format}: x-oda-pruning: off disables pruning for that request only`, async () => {
      const id = `off-${format}`;
      const driver = chatDriver(format, gw.url, gw.fake, MODEL, { headers: { 'x-session-id': id } });
      driver.user('Read everything.');
      for (let i = 0; i < 6; i++) {
        driver.assistantToolCall(`call_off_${i}`, 'read_file', { path: `/f${i}` });
        driver.toolResult(`call_off_${i}`, resultText(i));
      }
      driver.assistantText('Read them all.');
      driver.user('Now explain.');
      const off = await driver.call({ headers: { 'x-oda-pruning': 'off' } });
      assertUntouched(off, 'x-oda-pruning: off on a chat with no clock, over the ratio');
      assert.equal(off.provider.headers['x-oda-pruning'], undefined, 'the gateway header is not forwarded');
      assert.equal(ofType(await getEvents(gw.url, id), 'pruning').length, 0);

      // The successful call warmed the cache: inside the ttl the next request is untouched anyway...
      gw.clock.advance(MINUTE);
      driver.user('More?');
      assertUntouched(await driver.call(), 'warm cache after the call');
      // ...and once it expires, without the header, the pass runs.
      gw.clock.advance(TTL + 1);
      driver.user('Even more?');
      const pruned = await driver.call();
      assert.match(prunedHeader(pruned) ?? '', /^soft=\d+,cleared=0$/);
      assert.equal(ofType(await getEvents(gw.url, id), 'pruning').length, 1);
    });

    test(`${format}: a pruned result stays pruned once the image replay clean-up reaches its turn`, async () => {
      // Result 0 carries a media reference and an image. It is pruned while its turn is among the 3
      // newest completed ones (the clean-up leaves it alone); three turns later the clean-up rewrites
      // it, and the projection must still apply: the model never gets the pruned text back.
      const id = `aging-${format}`;
      const driver = chatDriver(format, gw.url, gw.fake, MODEL, { headers: { 'x-session-id': id } });
      driver.user('Take a screenshot and read everything.');
      const shot = `screenshot saved to media://inbound/shot-0.png\n${resultText(0)}`;
      for (let i = 0; i < 6; i++) {
        driver.assistantToolCall(`call_age_${i}`, 'read_file', { path: `/f${i}` });
        driver.toolResult(
          `call_age_${i}`,
          i === 0 ? [{ text: shot }, { image: makePng(4, 4) }] : resultText(i),
        );
      }
      driver.assistantText('Read them all.');
      driver.user('Now explain.');
      const first = await driver.call();
      assert.equal(prunedHeader(first), 'soft=4,cleared=0');
      const prunedShot = contentText(wireToolResults(first.providerBody).get('call_age_0'));
      assert.ok(
        prunedShot.startsWith('screenshot saved to media://inbound/shot-0.png\n'),
        'the reference is kept while its turn is recent',
      );
      assert.ok(prunedShot.includes(`kept first 1500 chars and last 1500 chars of ${shot.length} chars.]`));

      let out = first;
      for (let t = 1; t <= 3; t++) {
        driver.user(`Follow-up ${t}.`);
        out = await driver.call();
        assert.equal(prunedHeader(out), null);
      }
      const results = wireToolResults(out.providerBody);
      const aged = JSON.stringify(results.get('call_age_0'));
      assert.ok(!aged.includes('media://inbound/'), 'the clean-up reached the first turn');
      assert.ok(aged.includes('[media reference removed - already processed by model]'));
      assert.ok(!aged.includes('"image_url"') && !aged.includes('"base64"'), 'no image goes out again');
      assert.ok(
        contentText(results.get('call_age_0')).length < 3500,
        'still soft-trimmed, not the full 10,000 characters',
      );
      assert.ok(
        contentText(results.get('call_age_0')).includes(
          '[Tool result trimmed: kept first 1500 chars and last 1500 chars of',
        ),
      );
      for (let i = 1; i < 4; i++)
        assert.equal(contentText(results.get(`call_age_${i}`)), softTrimmed(resultText(i)));
      assert.equal(
        ofType(await getEvents(gw.url, id), 'pruning').length,
        1,
        'no new pass: the cache is warm',
      );
    });
  }
});

describe('cache-TTL pruning through the gateway (hard clear)', () => {
  let gw: TestGateway;
  const HARD = 0.2;
  before(async () => {
    gw = await startGateway({
      config: {
        models: { 'small-*': { contextWindow: WINDOW } },
        pruning: { mode: 'cache-ttl', ttl: '5m', hardClearRatio: HARD, minPrunableToolChars: 10_000 },
      },
    });
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: clears the oldest soft-trimmed results until the estimate is under hardClearRatio`, async () => {
      const chat = await growAgentChat(gw, format);
      const { driver, sessionId, callIds } = chat;
      gw.clock.advance(TTL + 1);
      driver.user('Summarize what you found.');
      const out = await driver.call();
      // Nothing moved the cutoff since the loop: results 0-9 precede tool call 10, the 3rd last assistant message.
      const prunable = callIds.slice(0, 10);
      const results = wireToolResults(out.providerBody);
      const cleared = prunable.filter((id) => contentText(results.get(id)) === CLEARED);
      assert.ok(cleared.length > 0, 'some results were cleared');
      // Oldest first: the cleared ones are a prefix, the rest of the prunable ones are soft-trimmed.
      assert.deepEqual(cleared, prunable.slice(0, cleared.length));
      prunable.slice(cleared.length).forEach((id) => {
        assert.equal(contentText(results.get(id)), softTrimmed(resultText(callIds.indexOf(id))));
      });
      for (const id of callIds.slice(10))
        assert.equal(contentText(results.get(id)), resultText(callIds.indexOf(id)));
      if (chat.preambleId)
        assert.equal(contentText(results.get(chat.preambleId)), bigText('preamble', RESULT_CHARS));
      assert.equal(prunedHeader(out), `soft=${prunable.length - cleared.length},cleared=${cleared.length}`);
      assertOnlyToolResultsChanged(format, out, new Set(prunable));
      // Under the ratio now, and not one clear more than needed.
      assert.ok(estimateTokens(format, out.providerBody) < HARD * WINDOW);
      const lastCleared = cleared[cleared.length - 1]!;
      const oneLess = structuredClone(out.providerBody);
      for (const [id, content] of wireToolResults(oneLess)) {
        if (id !== lastCleared) continue;
        const restored = softTrimmed(resultText(callIds.indexOf(id)));
        for (const m of wireMessages(oneLess)) {
          if (m.role === 'tool' && m.tool_call_id === id) m.content = restored;
          if (Array.isArray(m.content)) {
            for (const b of m.content) if (isObj(b) && b.tool_use_id === id) b.content = restored;
          }
        }
        assert.equal(contentText(content), CLEARED);
      }
      assert.ok(
        estimateTokens(format, oneLess) >= HARD * WINDOW,
        'one clear fewer would not have been enough',
      );

      const session = await getSession(gw.url, sessionId);
      const lastPruning = (
        session.snapshot.values['cache-clock'] as { lastPruning: { soft: number; cleared: number } }
      ).lastPruning;
      assert.equal(lastPruning.soft, prunable.length - cleared.length);
      assert.equal(lastPruning.cleared, cleared.length);

      // Sticky: cleared results stay cleared, byte for byte, on the next request inside the ttl.
      driver.user('Thanks!');
      const next = await driver.call();
      assert.equal(prunedHeader(next), null);
      const nextResults = wireToolResults(next.providerBody);
      for (const id of callIds)
        assert.equal(JSON.stringify(nextResults.get(id)), JSON.stringify(results.get(id)));
    });
  }
});

describe('cache-TTL pruning defaults (Anthropic format prunes, ttl from cache_control)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { models: { 'small-*': { contextWindow: WINDOW } } } });
  });
  after(() => gw.close());

  /** An Anthropic chat over the ratio whose first call (pruning off) warms the cache. */
  async function warmChat(id: string, ttl: '1h' | undefined): Promise<ChatDriver> {
    const driver = chatDriver('anthropic', gw.url, gw.fake, MODEL, {
      anthropicSystem: [
        {
          type: 'text',
          text: 'Be brief.',
          cache_control: ttl ? { type: 'ephemeral', ttl } : { type: 'ephemeral' },
        },
      ],
      headers: { 'x-session-id': id },
    });
    driver.user('Read everything.');
    for (let i = 0; i < 6; i++) {
      driver.assistantToolCall(`toolu_${id}_${i}`, 'read_file', { path: `/f${i}` });
      driver.toolResult(`toolu_${id}_${i}`, resultText(i));
    }
    driver.assistantText('Read them all.');
    driver.user('Now explain.');
    assertUntouched(await driver.call({ headers: { 'x-oda-pruning': 'off' } }), 'warming call');
    return driver;
  }

  test('a 1h cache_control marker: not pruned 10 minutes after the last call, pruned after 61', async () => {
    const driver = await warmChat('ttl-1h', '1h');
    gw.clock.advance(10 * MINUTE);
    driver.user('Ten minutes later.');
    assertUntouched(await driver.call(), '10 minutes after the last call with a 1h marker');
    gw.clock.advance(61 * MINUTE);
    driver.user('An hour later.');
    const out = await driver.call();
    // The last 3 assistant messages are the three answers: all six results are prunable.
    assert.equal(out.headers.get('x-oda-pruned'), 'soft=6,cleared=0');
    // The marker itself passes unchanged.
    assert.deepEqual(out.providerBody.system, [
      { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } },
    ]);
  });

  test('without a 1h marker the ttl is 5 minutes', async () => {
    const driver = await warmChat('ttl-5m', undefined);
    gw.clock.advance(5 * MINUTE);
    driver.user('Five minutes later.');
    assertUntouched(await driver.call(), 'exactly 5 minutes: still warm');
    gw.clock.advance(10 * MINUTE);
    driver.user('Ten minutes later.');
    assert.equal((await driver.call()).headers.get('x-oda-pruned'), 'soft=6,cleared=0');
  });

  test('the OpenAI format is not pruned unless configured', async () => {
    const driver = chatDriver('openai', gw.url, gw.fake, MODEL, {
      headers: { 'x-session-id': 'openai-default' },
    });
    driver.user('Read everything.');
    for (let i = 0; i < 6; i++) {
      driver.assistantToolCall(`call_d_${i}`, 'read_file', { path: `/f${i}` });
      driver.toolResult(`call_d_${i}`, resultText(i));
    }
    driver.assistantText('Read them all.');
    driver.user('Now explain.');
    assertUntouched(await driver.call(), 'openai, no pruning config, no clock, over the ratio');
  });
});
