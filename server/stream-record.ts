/**
 * What the log keeps of a streamed answer as it passes: its events read as they arrive and folded
 * into the answer (`StreamAccumulator`), which costs about the answer's own length, not the
 * stream's. An answer larger than the gateway logs (`maxChars`, by default the cap of a JSON answer
 * read whole) is not recorded: past it, its content is let go of and no more is kept, while how
 * the stream ends (its end marker, usage, failure) is still read; the client gets the stream whole
 * all the same.
 */
import type { FormatAdapter, NormalizedResponse, StreamAccumulator } from '../providers/provider.ts';
import { MAX_WHOLE_ANSWER_BYTES } from '../providers/upstream-client.ts';
import { SseReader } from '../lib/sse-reader.ts';

/** Most characters of a streamed answer the log keeps: as many as a JSON answer read whole. */
export const MAX_RECORDED_STREAM_CHARS = MAX_WHOLE_ANSWER_BYTES;

export class StreamRecord {
  private readonly acc: StreamAccumulator;
  private readonly reader: SseReader;
  private dropped: string | undefined;

  constructor(
    adapter: FormatAdapter,
    private readonly maxChars: number = MAX_RECORDED_STREAM_CHARS,
  ) {
    this.acc = adapter.createStreamAccumulator();
    this.reader = new SseReader(
      (event, data) => {
        try {
          this.acc.push(event, data);
        } catch {
          // The log observes; a chunk it cannot read never breaks the client's stream.
        }
      },
      // One event longer than the whole answer may be cannot be kept either.
      { maxEventChars: maxChars, onOversize: () => this.drop() },
    );
  }

  /** Reads a chunk of the stream as it passes on to the client. */
  push(chunk: Uint8Array): void {
    this.reader.push(chunk);
    this.check();
  }

  /** The stream is over: reads a last event that had no blank line after it. */
  end(): void {
    this.reader.end();
    this.check();
  }

  get accumulator(): Pick<StreamAccumulator, 'ended' | 'failure' | 'failureType' | 'responseId'> {
    return this.acc;
  }

  /** Why the answer is not in the log, when it is not. */
  notRecorded(): string | undefined {
    return this.dropped;
  }

  /**
   * The answer as the log keeps it; when it was not recorded, its usage, stop reason and ids
   * without any content (no answer message is logged).
   */
  result(): NormalizedResponse {
    const r = this.acc.result();
    if (this.dropped === undefined) return r;
    return { ...r, message: { role: 'model', content: [] }, messages: [] };
  }

  private check(): void {
    if (this.dropped === undefined && this.acc.held() > this.maxChars) this.drop();
  }

  private drop(): void {
    if (this.dropped !== undefined) return;
    this.dropped = `answer not recorded: larger than the gateway logs (more than ${this.maxChars} characters)`;
    this.acc.dropContent();
  }
}
