/**
 * How a retrieve records a background response's answer (SPEC sections 6 and 9), besides the JSON
 * retrieve's first record (responses-background-log.test.ts): a streamed retrieve
 * (`?stream=true`, from the start or `starting_after` an event) records it from the stream's
 * closing event, once, the same way, and passes the stream on as it comes; and a retrieve whose
 * client leaves while the answer is being written holds the gateway's shutdown until the record is
 * in the log. Through the official `openai` SDK (and a plain `fetch` the test aborts), against the
 * fake provider, which streams a background response as the API does.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Event, NewEvent } from '../../chat-log/format/current.ts';
import { FileLogBackend } from '../../chat-log/store-file.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

/** The texts of the model messages of `events`. */
function modelTexts(events: readonly Event[]): string[] {
  return eventsOfType(events, 'message')
    .filter((e) => e.role === 'model')
    .map((e) => e.content.map((p) => (p.kind === 'text' ? p.text : '')).join(''));
}

describe('a streamed retrieve logs the background answer from its closing event', () => {
  let gw: TestGateway;
  let client: OpenAI;
  before(async () => {
    gw = await startGateway();
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
  });
  after(() => gw.close());

  /** A background call answered queued, with the chat it was logged in. */
  async function queued(input: string, sid: string) {
    const { data, response } = await client.responses
      .create({ model: 'gpt-5', input, background: true }, { headers: { 'x-session-id': sid } })
      .withResponse();
    assert.equal(data.status, 'queued');
    return { id: data.id, chatId: response.headers.get('x-session-id')! };
  }

  /** The events' types of a streamed retrieve of `id`, and its closing event's response. */
  async function streamed(id: string, startingAfter?: number) {
    const stream = await client.responses.retrieve(id, {
      stream: true,
      ...(startingAfter !== undefined && { starting_after: startingAfter }),
    });
    const types: string[] = [];
    let last: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if ('response' in event) last = event.response;
    }
    return { types, last: last! };
  }

  test('from the start: logged once, as the JSON retrieve logs it', async () => {
    gw.fake.script({ responses: { output: [responsesMessage('the streamed answer', 'msg_bg_streamed')] } });
    const { id, chatId } = await queued('a long job', 'bg-stream');
    const { types, last } = await streamed(id);
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    assert.equal(last.status, 'completed');

    // In the log by the time the client has the end of the stream.
    const events = await sessionEvents(gw.url, chatId);
    assert.deepEqual(modelTexts(events), ['the streamed answer']);
    const logged = eventsOfType(events, 'response');
    assert.deepEqual(
      logged.map((e) => [e.stopReason, e.ok, e.responseId]),
      [
        ['queued', true, id],
        ['completed', true, id],
      ],
    );
    assert.equal(logged[1]!.requestId, logged[0]!.requestId, 'the answer of the queued call');
    assert.ok((last.usage?.output_tokens ?? 0) > 0);
    assert.equal(logged[1]!.usage?.outputTokens, last.usage?.output_tokens);
    assert.equal(events.at(-2)!.type, 'message', 'the model message right before its response event');

    // Streamed again, or retrieved as JSON: nothing more is logged.
    await streamed(id);
    assert.equal((await client.responses.retrieve(id)).status, 'completed');
    assert.equal((await sessionEvents(gw.url, chatId)).length, events.length);
  });

  test('resumed with starting_after: logged from the closing event, with its outcome', async () => {
    gw.fake.script({
      responses: { output: [responsesMessage('cut short', 'msg_bg_resumed')], status: 'incomplete' },
    });
    const { id, chatId } = await queued('a job cut short', 'bg-resume');
    const { types, last } = await streamed(id, 3);
    assert.notEqual(types[0], 'response.created', 'the stream went on after event 3');
    assert.equal(types.at(-1), 'response.incomplete');
    assert.equal(last.status, 'incomplete');
    const events = await sessionEvents(gw.url, chatId);
    assert.deepEqual(modelTexts(events), ['cut short']);
    assert.deepEqual(
      eventsOfType(events, 'response').map((e) => e.stopReason),
      // An incomplete answer's stop reason is why it stopped, as a call answered at once logs it.
      ['queued', 'max_output_tokens'],
    );
    // The JSON retrieve finds it logged.
    await client.responses.retrieve(id);
    assert.equal((await sessionEvents(gw.url, chatId)).length, events.length);
  });

  test('the stream is passed on as it comes: the client reads its start before the provider sends the rest', async () => {
    gw.fake.script({ responses: { output: [responsesMessage('held a while', 'msg_bg_held')] } });
    const { id, chatId } = await queued('a held job', 'bg-held');
    let release = () => {};
    const until = new Promise<void>((resolve) => (release = resolve));
    gw.fake.script((rec) => {
      const url = new URL(rec.path, 'http://fake');
      const reply = gw.fake.responsesApi.route(rec.method, url.pathname, {}, url.searchParams);
      assert.ok(reply && 'sse' in reply, 'the fake streams the retrieve');
      return { ...reply, holdAfter: { events: 2, until } };
    });
    const stream = await client.responses.retrieve(id, { stream: true });
    const types: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (types.length === 2) {
        // The provider holds the rest: nothing is logged yet, and the client has the start.
        assert.deepEqual(modelTexts(await sessionEvents(gw.url, chatId)), []);
        release();
      }
    }
    assert.equal(types.at(-1), 'response.completed');
    assert.deepEqual(modelTexts(await sessionEvents(gw.url, chatId)), ['held a while']);
  });
});

/** True when `events` is the record of a finished background answer (its response event). */
function isAnswerRecord(events: readonly NewEvent[]): boolean {
  return events.some((e) => e.type === 'response' && e.stopReason === 'completed' && e.responseId);
}

/**
 * The file store, with the write of a background answer's record held slow: it starts, then waits
 * until `release` is called before it goes to disk.
 */
class SlowAnswerBackend extends FileLogBackend {
  private onStart: () => void = () => {};
  /** Settles once the record's write has started. */
  readonly started = new Promise<void>((resolve) => (this.onStart = resolve));
  release: () => void = () => {};
  private readonly held = new Promise<void>((resolve) => (this.release = resolve));
  written = false;
  override async append(...args: Parameters<FileLogBackend['append']>): Promise<Event[]> {
    if (!isAnswerRecord(args[1])) return super.append(...args);
    this.onStart();
    await this.held;
    const stored = await super.append(...args);
    this.written = true;
    return stored;
  }
}

describe(
  'a retrieve whose client leaves while the background answer is recorded',
  { skip: testStoreIsRedis && 'runs once, in the file-store pass (its own file store)' },
  () => {
    test('the shutdown drain waits for the record; it is in the log after close', async () => {
      const dataDir = tempDir('oda-bg-leave-');
      const backend = new SlowAnswerBackend({ dataDir });
      const gw = await startGateway({ dataDir, deps: { backend } });
      let chatId: string;
      try {
        const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
        gw.fake.script({ responses: { output: [responsesMessage('written slowly', 'msg_bg_slow')] } });
        const { data: queued, response } = await client.responses
          .create(
            { model: 'gpt-5', input: 'a long job', background: true },
            { headers: { 'x-session-id': 'bg-leave' } },
          )
          .withResponse();
        chatId = response.headers.get('x-session-id')!;
        assert.equal(queued.status, 'queued');

        // The retrieve finds the answer finished and starts its record; the client leaves meanwhile.
        const leave = new AbortController();
        const retrieve = fetch(`${gw.url}/v1/responses/${queued.id}`, {
          headers: { authorization: 'Bearer sk-client' },
          signal: leave.signal,
        }).then(
          async (res) => void (await res.text()),
          () => undefined,
        );
        await backend.started;
        leave.abort();
        await retrieve;
        // The store takes the write a moment later; the gateway is shutting down by then.
        setTimeout(() => backend.release(), 300);
        const drain = gw.gateway.context.drain;
        drain.start();
        assert.equal(await drain.settled(5000), true, 'the drain settled');
        assert.equal(backend.written, true, 'the drain waited for the record under way');
      } finally {
        backend.release();
        await gw.close();
      }

      // Opened again, the log holds the answer.
      const again = await startGateway({ dataDir });
      try {
        const events = await sessionEvents(again.url, chatId);
        assert.deepEqual(
          eventsOfType(events, 'response').map((e) => e.stopReason),
          ['queued', 'completed'],
        );
      } finally {
        await again.close();
      }
    });
  },
);
