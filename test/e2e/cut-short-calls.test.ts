/**
 * Calls whose answer never reached the client whole: a client that leaves mid-stream, or before the
 * provider answered, and a provider whose stream breaks off. Each request is counted once in
 * `oda_requests_total` and once in `oda_requests_cut_total` with why, and the call's log line says
 * it was cut short and why, never "model call done" as for an answer delivered whole. A JSON answer
 * the provider breaks off reaches the client as the gateway's 502, and is logged (in that one line)
 * and counted as that. (The grace period's end at shutdown is the process test's.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicStream, bodies, openaiCompletion, openaiStream } from '../fake-provider/fake-bodies.ts';
import { Captured } from '../helpers/captured-log.ts';
import type { FakeReply } from '../fake-provider/fake-provider.ts';
import { createLogger } from '../../server/logger.ts';

const ROUTE = '/v1/chat/completions';

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  [field: string]: unknown;
}

/** A promise and the function that settles it: an answer the test keeps from the client. */
function held(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

async function eventually<T>(find: () => T | undefined): Promise<T> {
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a call cut short is counted, and logged as cut short with why', () => {
  let gw: TestGateway;
  const logs = new Captured();
  const holds: Array<() => void> = [];
  before(async () => {
    gw = await startGateway({
      config: { logLevel: 'info' },
      deps: { logger: createLogger('info', logs) },
    });
  });
  after(async () => {
    for (const release of holds) release();
    await gw.close();
  });

  const lines = (): LogLine[] =>
    logs.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogLine);
  /** The model call's closing log line (the call's lines name its provider), after the first `from`. */
  const callLine = (from: number) =>
    eventually(() =>
      lines()
        .slice(from)
        .find((l) => l.provider !== undefined),
    );

  /** The value of a counter series in /metrics (0 when absent). */
  async function counter(name: string, labels: string): Promise<number> {
    const text = await (await fetch(`${gw.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
    return line ? Number(line.split(' ')[1]) : 0;
  }
  async function counts(status: string, reason: string): Promise<[number, number]> {
    return [
      await counter('oda_requests_total', `route="${ROUTE}",status="${status}"`),
      await counter('oda_requests_cut_total', `route="${ROUTE}",reason="${reason}"`),
    ];
  }

  /** The chat log's response event of the call `res` answered. */
  async function loggedResponse(res: Response): Promise<{ status: number; error?: string }> {
    const chat = res.headers.get('x-session-id')!;
    const { events } = (await (await fetch(`${gw.url}/v1/sessions/${chat}/events`)).json()) as {
      events: Array<{ type: string; requestId?: string; status: number; error?: string }>;
    };
    const id = res.headers.get('x-oda-request-id');
    const found = events.find((e) => e.type === 'response' && e.requestId === id);
    assert.ok(found, `the response of ${id} is logged`);
    return found;
  }

  function post(body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
    return fetch(`${gw.url}${ROUTE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], ...body }),
      ...(signal ? { signal } : {}),
    });
  }

  test('a client that leaves mid-stream', async () => {
    const hold = held();
    holds.push(hold.release);
    gw.fake.script({
      sse: openaiStream('gpt-test', ['first ', 'second ']),
      holdAfter: { events: 2, until: hold.until },
    });
    const [total, cut] = await counts('200', 'client');
    const from = lines().length;
    const leave = new AbortController();
    const res = await post({ stream: true }, leave.signal);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('first ')) seen += Buffer.from((await reader.read()).value!).toString();
    leave.abort();

    const line = await callLine(from);
    assert.equal(line.msg, 'model call cut short', JSON.stringify(line));
    assert.equal(line.reqId, res.headers.get('x-oda-request-id'));
    assert.equal(line.cutBy, 'client');
    assert.equal(line.complete, false);
    assert.equal(line.streamed, true);
    assert.equal(line.level, 30, 'info: users stop answers all the time');
    assert.deepEqual(await counts('200', 'client'), [total + 1, cut + 1]);
    // The chat log keeps what came, and says the client went away.
    const logged = await loggedResponse(res);
    assert.equal(logged.status, 200);
    assert.equal(logged.error, 'stream ended before completion: the client went away');
  });

  test('a client that leaves before the provider answered', async () => {
    const hold = held();
    holds.push(hold.release);
    gw.fake.script({ json: openaiCompletion('gpt-test', 'too late'), after: hold.until });
    const [total, cut] = await counts('none', 'client');
    const abandoned = await counter(
      'oda_upstream_latency_seconds_count',
      'provider="fake-openai",outcome="aborted"',
    );
    const from = lines().length;
    const asked = gw.fake.requests.length;
    const leave = new AbortController();
    const pending = post({}, leave.signal);
    await eventually(() => (gw.fake.requests.length > asked ? true : undefined));
    leave.abort();
    await assert.rejects(pending);

    const line = await callLine(from);
    assert.equal(line.msg, 'model call cut short', JSON.stringify(line));
    assert.equal(line.cutBy, 'client');
    assert.equal(line.answered, false);
    // No status line ever went out: counted as status "none".
    assert.deepEqual(await counts('none', 'client'), [total + 1, cut + 1]);
    // The attempt the client abandoned is timed apart from answers and failures.
    assert.equal(
      await counter('oda_upstream_latency_seconds_count', 'provider="fake-openai",outcome="aborted"'),
      abandoned + 1,
    );
  });

  test('a provider stream that breaks off', async () => {
    gw.fake.script({ sse: openaiStream('gpt-test', ['first ', 'second ', 'third ']), resetAfter: 2 });
    const [total, cut] = await counts('200', 'upstream');
    const from = lines().length;
    const res = await post({ stream: true });
    assert.equal(res.status, 200);
    await assert.rejects(res.text(), 'the client sees the stream break off');

    const line = await callLine(from);
    assert.equal(line.msg, 'model call cut short', JSON.stringify(line));
    assert.equal(line.cutBy, 'upstream');
    assert.equal(line.complete, false);
    assert.equal(line.level, 40, 'warn');
    assert.deepEqual(await counts('200', 'upstream'), [total + 1, cut + 1]);
    // Why, in the line and in the chat log: the provider's connection broke.
    assert.equal(line.code, 'ODA_ERR_UPSTREAM_UNREACHABLE');
    assert.match(
      String(line.error),
      /^provider "fake-openai" broke off its answer \(HTTP 200\) before it was whole: /,
    );
    const logged = await loggedResponse(res);
    assert.equal(logged.status, 200);
    assert.equal(logged.error, `stream ended before completion: ${String(line.error)}`);
  });

  test('a JSON answer the provider breaks off: the log and the metrics say the client got a 502, and why', async () => {
    const whole = JSON.stringify(openaiCompletion('gpt-test', 'never whole'));
    gw.fake.script({ truncated: whole, sent: 20 });
    const [total502, cut] = await counts('502', 'upstream');
    const total200 = await counter('oda_requests_total', `route="${ROUTE}",status="200"`);
    const tokens = await (await fetch(`${gw.url}/metrics`)).text();
    const from = lines().length;
    const res = await fetch(`${gw.url}${ROUTE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'cut-json-answer' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'cut me' }] }),
    });
    assert.equal(res.status, 502);
    const sent = ((await res.json()) as { error: { code: string; message: string } }).error;
    assert.equal(sent.code, 'ODA_ERR_UPSTREAM_UNREACHABLE');
    assert.match(
      sent.message,
      /^provider "fake-openai" broke off its answer \(HTTP 200\) before it was whole: /,
    );

    // The chat log: a failed response with the status the client got and the message it got.
    const { events } = (await (await fetch(`${gw.url}/v1/sessions/cut-json-answer/events`)).json()) as {
      events: Array<{ type: string; status?: number; ok?: boolean; error?: string }>;
    };
    const logged = events.filter((e) => e.type === 'response');
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.status, 502);
    assert.equal(logged[0]!.ok, false);
    assert.equal(logged[0]!.error, `answer ended before completion: ${sent.message}`);
    assert.equal(
      events.filter((e) => e.type === 'message').length,
      1,
      'no model message: none of the answer was read',
    );
    // Not an answered call: nothing counted on the chat's bill.
    const session = (await (await fetch(`${gw.url}/v1/sessions/cut-json-answer`)).json()) as {
      usage: { answered: number };
    };
    assert.equal(session.usage.answered, 0);

    // The call's closing line: cut short by the provider, with the status the client got.
    const line = await callLine(from);
    assert.equal(line.msg, 'model call cut short', JSON.stringify(line));
    assert.equal(line.reqId, res.headers.get('x-oda-request-id'));
    assert.equal(line.cutBy, 'upstream');
    assert.equal(line.status, 502);
    assert.equal(line.upstreamStatus, 200);
    assert.equal(line.streamed, false);
    assert.equal(line.error, sent.message);
    assert.equal(line.level, 40, 'warn');
    // One failure, one line at warn or above: the error handler renders the 502 without logging it again.
    const loud = lines()
      .slice(from)
      .filter((l) => l.reqId === line.reqId && l.level >= 40);
    assert.deepEqual(
      loud.map((l) => l.msg),
      ['model call cut short'],
      JSON.stringify(loud),
    );
    // That line says all the error handler's would have: the chat, and the code the client got.
    assert.equal(line.chatId, 'cut-json-answer');
    assert.equal(line.code, sent.code);

    // Counted as the 502 it was, whole (the client got a whole error answer), never as a 200.
    assert.deepEqual(await counts('502', 'upstream'), [total502 + 1, cut]);
    assert.equal(await counter('oda_requests_total', `route="${ROUTE}",status="200"`), total200);
    assert.equal(
      (await (await fetch(`${gw.url}/metrics`)).text()).match(/^oda_tokens_total.*$/gm)?.join('\n'),
      tokens.match(/^oda_tokens_total.*$/gm)?.join('\n'),
      'not counted as an answered call',
    );
  });

  test('an answer the provider says failed inside its 200: the line says so, at warn', async () => {
    const failing: Array<{
      reply: FakeReply;
      stream: boolean;
      msg: string;
      failure: string;
      cut?: string;
    }> = [
      {
        // An error chunk, then [DONE] (vLLM, OpenRouter): the stream closed, the answer did not
        // come whole. An error without a type is counted as `other`.
        reply: {
          sse: [
            ...openaiStream('gpt-test', ['half']).slice(0, 2),
            { data: JSON.stringify({ error: { message: 'Engine died mid-answer.' } }) },
            { data: '[DONE]' },
          ],
        },
        stream: true,
        msg: 'model call cut short',
        failure: 'Engine died mid-answer.',
        cut: 'provider-error:other',
      },
      {
        // The client's answer, an error body, was whole: not cut.
        reply: { json: { error: { message: 'The model crashed.', type: 'server_error', code: 500 } } },
        stream: false,
        msg: 'model call done',
        failure: 'The model crashed.',
      },
    ];
    for (const c of failing) {
      gw.fake.script(c.reply);
      const [, cut] = await counts('200', c.cut ?? 'upstream');
      const from = lines().length;
      const res = await post({ stream: c.stream });
      assert.equal(res.status, 200);
      await res.text();
      const line = await callLine(from);
      assert.equal(line.msg, c.msg, JSON.stringify(line));
      assert.equal(line.failure, c.failure);
      assert.equal(line.level, 40, 'warn: the client got a failed answer');
      if (c.cut) assert.equal(line.cutBy, c.cut);
      assert.equal((await counts('200', c.cut ?? 'upstream'))[1], c.cut ? cut + 1 : cut);
    }
  });

  test("an Anthropic stream with an error event, closed normally: counted as cut by the provider's error type", async () => {
    const route = '/v1/messages';
    const cutCount = () =>
      counter('oda_requests_cut_total', `route="${route}",reason="provider-error:overloaded_error"`);
    const before = await cutCount();
    const events = anthropicStream('claude-test', ['Hel']).slice(0, 4);
    events.push({
      event: 'error',
      data: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
    });
    gw.fake.script({ sse: events });
    const from = lines().length;
    const res = await fetch(`${gw.url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-test',
        max_tokens: 10,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    assert.equal(res.status, 200);
    // The client gets the stream as the provider closed it, its error event included.
    assert.match(await res.text(), /event: error\ndata: .*overloaded_error/);

    const line = await callLine(from);
    assert.equal(line.msg, 'model call cut short', JSON.stringify(line));
    assert.equal(line.cutBy, 'provider-error:overloaded_error');
    assert.equal(line.failure, 'Overloaded');
    assert.equal(line.level, 40, 'warn');
    assert.equal(await cutCount(), before + 1, 'counted as cut, with the error type');
    // The chat log: a failed response with the provider's message.
    const logged = (await loggedResponse(res)) as { status: number; ok?: boolean; error?: string };
    assert.equal(logged.status, 200);
    assert.equal(logged.ok, false);
    assert.equal(logged.error, 'Overloaded');
  });

  test('a stream the provider closes before saying it is over is counted as cut by the provider', async () => {
    gw.fake.script({ sse: openaiStream('gpt-test', ['first ', 'second ']).slice(0, 2) });
    const [total, cut] = await counts('200', 'upstream');
    const from = lines().length;
    const res = await post({ stream: true });
    assert.equal(res.status, 200);
    await res.text();
    const line = await callLine(from);
    assert.equal(line.msg, 'model call cut short', JSON.stringify(line));
    assert.equal(line.cutBy, 'upstream');
    assert.deepEqual(await counts('200', 'upstream'), [total + 1, cut + 1]);
    assert.equal((await loggedResponse(res)).error, 'stream ended before completion');
  });

  test('a whole answer is counted once and not as cut', async () => {
    const [total, cut] = await counts('200', 'client');
    const from = lines().length;
    const res = await post({ stream: true });
    assert.match(await res.text(), /\[DONE\]/);
    const line = await callLine(from);
    assert.equal(line.msg, 'model call done');
    assert.deepEqual(await counts('200', 'client'), [total + 1, cut]);
  });
});

describe('a client that leaves while the gateway waits to retry', () => {
  let gw: TestGateway;
  const logs = new Captured();
  before(async () => {
    gw = await startGateway({
      config: { logLevel: 'info', retries: { maxRetries: 2, initialDelayMs: 5000, maxDelayMs: 8000 } },
      // The gateway's own sleep, not the recording one: the backoff really waits.
      deps: { logger: createLogger('info', logs), sleep: undefined },
    });
  });
  after(() => gw.close());

  test('is logged with the one attempt made, and the wait ends when the client leaves', async () => {
    gw.fake.script({ status: 503, json: bodies.openaiServerError() });
    const leave = new AbortController();
    const pending = fetch(`${gw.url}${ROUTE}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': 'left-in-backoff' },
      body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
      signal: leave.signal,
    });
    await eventually(() => (logs.text.includes('retrying upstream call') ? true : undefined));
    const left = performance.now();
    leave.abort();
    await assert.rejects(pending);

    const line = await eventually(() =>
      logs.text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LogLine)
        .find((l) => l.msg === 'model call cut short'),
    );
    assert.equal(line.attempts, 1, JSON.stringify(line));
    assert.equal(line.cutBy, 'client');
    assert.ok(performance.now() - left < 4000, 'the 5 s backoff ended when the client left');
    assert.equal(gw.fake.requestsTo(ROUTE).length, 1, 'no second attempt went upstream');
    const { events } = (await (await fetch(`${gw.url}/v1/sessions/left-in-backoff/events`)).json()) as {
      events: Array<{ type: string; attempts?: number; ok?: boolean }>;
    };
    const logged = events.find((e) => e.type === 'response');
    assert.equal(logged?.ok, false);
    assert.equal(logged?.attempts, 1, 'the chat log counts the attempts made');
    // The retry was decided and logged, never made: the retries metric does not count it.
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    assert.doesNotMatch(metrics, /^oda_upstream_retries_total\{[^}]*\} [1-9]/m, 'no retry counted');
  });
});
