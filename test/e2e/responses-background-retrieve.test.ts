/**
 * How a retrieve records a background response's answer (SPEC sections 6 and 9), besides the JSON
 * retrieve's first record (responses-background-log.test.ts): a retrieve whose client leaves while
 * the answer is being written holds the gateway's shutdown until the record is in the log. Through
 * the official `openai` SDK and a plain `fetch` the test aborts, against the fake provider.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { Event, NewEvent } from '../../chat-log/format/current.ts';
import { FileLogBackend } from '../../chat-log/store-file.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { startGateway, testStoreIsRedis } from '../helpers/start-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

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
