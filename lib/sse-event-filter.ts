/**
 * Takes chosen events out of an SSE byte stream as it passes through, every other byte as it came.
 * Fed the raw chunks, it returns what to send on for each: the complete events it keeps, while the
 * bytes of an event still arriving wait for its end (an event is judged whole). An event that grows
 * past `maxHeldBytes` is no candidate (the events taken out are small) and goes on as it arrives,
 * so a long event still streams.
 *
 * Events end at a blank line; lines end with CRLF, LF or a lone CR, as the SSE spec reads them
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 * An event's bytes run to the end of the blank line that ends it; what follows the last event (a
 * stream that closes without a blank line) goes on as it is at `end`.
 */
const LF = 10;
const CR = 13;

/** By default, events held whole to be judged are at most this long. */
const MAX_HELD_BYTES = 64 * 1024;

export class SseEventFilter {
  /** Bytes of the event in progress not yet sent on (held to be judged). */
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** The event in progress grew past the cap: its bytes go on as they come. */
  private passing = false;
  /** No byte of the current line has come yet. */
  private lineEmpty = true;
  /** The last byte seen was a CR: an LF first in the next chunk ends the same line. */
  private afterCr = false;
  /** The event in progress ended with a CR last in a chunk: it is judged once the next byte says whether an LF belongs to it. */
  private endPending = false;

  constructor(
    /** True for an event to take out; given the event's bytes, its closing blank line included. */
    private readonly drop: (event: Buffer) => boolean,
    private readonly maxHeldBytes = MAX_HELD_BYTES,
  ) {}

  /** The bytes of `chunk` (and of earlier chunks held until now) to send on; empty when none yet. */
  push(chunk: Buffer): Buffer {
    const out: Buffer[] = [];
    const n = chunk.length;
    let i = 0;
    if (this.afterCr && n > 0) {
      this.afterCr = false;
      if (chunk[0] === LF) i = 1;
    }
    // The bytes of `chunk` from here on belong to the event in progress.
    let start = 0;
    if (this.endPending && n > 0) {
      this.endPending = false;
      this.finish(chunk.subarray(0, i), out);
      start = i;
    }
    // Where the next LF and CR are (-1: none left), found once each, not once per line.
    let nextLf = n > i ? chunk.indexOf(LF, i) : -1;
    let nextCr = n > i ? chunk.indexOf(CR, i) : -1;
    while (i < n) {
      if (nextLf !== -1 && nextLf < i) nextLf = chunk.indexOf(LF, i);
      if (nextCr !== -1 && nextCr < i) nextCr = chunk.indexOf(CR, i);
      const j = nextLf === -1 ? nextCr : nextCr === -1 ? nextLf : Math.min(nextLf, nextCr);
      if (j === -1) {
        this.lineEmpty = false;
        break;
      }
      if (j > i) this.lineEmpty = false;
      let end = j + 1;
      let crLast = false;
      if (chunk[j] === CR) {
        if (end < n) {
          if (chunk[end] === LF) end++;
        } else crLast = true;
      }
      i = end;
      if (!this.lineEmpty) {
        this.lineEmpty = true;
        if (crLast) this.afterCr = true;
        continue;
      }
      // A blank line: the event in progress ends here.
      if (crLast) {
        this.afterCr = true;
        this.endPending = true;
        break;
      }
      this.finish(chunk.subarray(start, end), out);
      start = end;
    }
    if (start < n) this.add(chunk.subarray(start), out);
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** What is still held (an event the stream closed without ending), to send on as it is. */
  end(): Buffer {
    const out: Buffer[] = [];
    if (this.endPending) {
      this.endPending = false;
      this.finish(Buffer.alloc(0), out);
    }
    out.push(...this.held);
    this.held = [];
    this.heldBytes = 0;
    return Buffer.concat(out);
  }

  /** Bytes of the event in progress: held, or sent on once it is past the cap. */
  private add(bytes: Buffer, out: Buffer[]): void {
    if (this.passing) {
      out.push(bytes);
      return;
    }
    this.held.push(bytes);
    this.heldBytes += bytes.length;
    if (this.heldBytes > this.maxHeldBytes) {
      out.push(...this.held);
      this.held = [];
      this.heldBytes = 0;
      this.passing = true;
    }
  }

  /** The last bytes of the event in progress: the whole event is kept (sent on) or taken out. */
  private finish(last: Buffer, out: Buffer[]): void {
    if (this.passing) {
      out.push(last);
      this.passing = false;
      return;
    }
    const event = this.held.length === 0 ? last : Buffer.concat([...this.held, last]);
    this.held = [];
    this.heldBytes = 0;
    if (!this.drop(event)) out.push(event);
  }
}
