/**
 * An answer forwarded as it is (`forward-as-is.ts`), read as it goes by: a JSON answer read whole,
 * or an event stream read event by event, by an observer that may record what it read. The bytes
 * pass on as they arrive; only the chunk that completes what the observer reads waits until its
 * record is in place, so the record is there before the client has the answer. Every record
 * started is counted in `Records`, which the forwarding call waits for before it returns, whatever
 * became of the client: a call held at shutdown holds its records with it.
 */
import { SseReader } from '../lib/sse-reader.ts';
import { MAX_WHOLE_ANSWER_BYTES } from '../providers/upstream-client.ts';

/**
 * Reads one event of a stream (`event:` name, when given, and `data:`); returns the record it
 * started, if any, which the event's chunk waits for. Never throws, nor does the record reject.
 */
export type EventObserver = (event: string | undefined, data: string) => Promise<void> | undefined;

/** The records observers started during one forwarded call. */
export class Records {
  private readonly started: Array<Promise<void>> = [];

  /** Counts `record` and gives it back. */
  track(record: Promise<void>): Promise<void> {
    this.started.push(record);
    return record;
  }

  /** Settles once every record started so far has. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.started);
  }
}

/**
 * `body`'s chunks, passed on as they come but for the last one, held until `observe` has read the
 * whole text (when it is not longer than the gateway reads whole).
 */
export async function* observedJson(
  body: AsyncIterable<Buffer | Uint8Array>,
  observe: (text: string) => Promise<void>,
  records: Records,
): AsyncGenerator<Buffer | Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let held: Buffer | Uint8Array | undefined;
  for await (const chunk of body) {
    if (held) yield held;
    held = chunk;
    size += chunk.length;
    if (size <= MAX_WHOLE_ANSWER_BYTES) chunks.push(chunk);
  }
  if (size <= MAX_WHOLE_ANSWER_BYTES) await records.track(observe(Buffer.concat(chunks).toString('utf8')));
  if (held) yield held;
}

/**
 * `body`'s chunks (an event stream), each passed on as soon as it is read, after the records the
 * events it completes started (most chunks complete none, and go at once).
 */
export async function* observedEvents(
  body: AsyncIterable<Buffer | Uint8Array>,
  observe: EventObserver,
  records: Records,
): AsyncGenerator<Buffer | Uint8Array> {
  const waiting: Array<Promise<void>> = [];
  const reader = new SseReader((event, data) => {
    const record = observe(event, data);
    if (record) waiting.push(records.track(record));
  });
  for await (const chunk of body) {
    reader.push(chunk);
    if (waiting.length > 0) await Promise.all(waiting.splice(0));
    yield chunk;
  }
  // A last event without the blank line after it.
  reader.end();
  if (waiting.length > 0) await Promise.all(waiting.splice(0));
}
