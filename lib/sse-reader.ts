/**
 * An incremental SSE reader: fed raw chunks as they pass through, it reports each complete event
 * (`event:` name and joined `data:` lines). It only observes; the bytes are forwarded untouched.
 *
 * Lines end with CRLF, LF or a lone CR and a blank line ends an event, as the SSE spec reads them
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 * Each chunk is scanned once, from where the last one stopped: a line that spans many chunks (a
 * 16 MB delta) costs its length, not its length times its chunks. With `maxEventChars`, an event
 * longer than that is not kept: its text is let go of as it arrives and `onOversize` is told of it
 * instead of `onEvent`, so one endless line costs no more than the bound.
 */
export class SseReader {
  /** The current line's text so far, in the pieces it arrived in. */
  private partial: string[] = [];
  /** The last chunk ended with CR: an LF starting the next one belongs to that line end. */
  private afterCr = false;
  private event: string | undefined;
  private data: string[] = [];
  private readonly decoder = new TextDecoder();
  /** Characters of the current line's pieces, and of the current event's data lines, kept so far. */
  private partialChars = 0;
  private dataChars = 0;
  /** The current event passed `maxEventChars`: its text is dropped until it ends. */
  private oversize = false;

  constructor(
    private readonly onEvent: (event: string | undefined, data: string) => void,
    private readonly bound?: { maxEventChars: number; onOversize: () => void },
  ) {}

  push(chunk: Uint8Array): void {
    this.scan(this.decoder.decode(chunk, { stream: true }));
  }

  /** Flushes a final event that had no blank line after it. */
  end(): void {
    this.scan(this.decoder.decode());
    if (this.partial.length > 0) this.line(this.takePartial(''));
    this.afterCr = false;
    this.dispatch();
  }

  private scan(text: string): void {
    let start = 0;
    if (this.afterCr && text.length > 0) {
      if (text.charCodeAt(0) === 10) start = 1;
      this.afterCr = false;
    }
    const lineEnd = /[\r\n]/g;
    lineEnd.lastIndex = start;
    for (let m = lineEnd.exec(text); m !== null; m = lineEnd.exec(text)) {
      const at = m.index;
      this.line(this.takePartial(text.slice(start, at)));
      start = at + 1;
      if (text.charCodeAt(at) === 13) {
        if (start === text.length) this.afterCr = true;
        else if (text.charCodeAt(start) === 10) start++;
      }
      lineEnd.lastIndex = start;
    }
    if (start < text.length) {
      this.partialChars += text.length - start;
      if (this.withinBound()) this.partial.push(text.slice(start));
    }
  }

  /** False once the current event is past the bound: what it kept is let go of. */
  private withinBound(): boolean {
    if (!this.bound) return true;
    if (this.partialChars + this.dataChars > this.bound.maxEventChars && !this.oversize) {
      this.oversize = true;
      this.partial = [];
      this.data = [];
    }
    return !this.oversize;
  }

  private takePartial(tail: string): string {
    this.partialChars = 0;
    if (this.partial.length === 0) return tail;
    this.partial.push(tail);
    const whole = this.partial.join('');
    this.partial = [];
    return whole;
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (this.oversize) return;
    if (line.startsWith(':')) return; // comment, e.g. ": OPENROUTER PROCESSING"
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') {
      this.dataChars += value.length + 1;
      if (this.withinBound()) this.data.push(value);
    }
  }

  private dispatch(): void {
    const { event, data, oversize } = this;
    this.event = undefined;
    this.data = [];
    this.dataChars = 0;
    this.oversize = false;
    if (oversize) this.bound?.onOversize();
    else if (data.length || event) this.onEvent(event, data.join('\n'));
  }
}

/** Every event of a whole SSE text, in order (for transcripts and tests). */
export function readSseText(text: string): Array<{ event: string | undefined; data: string }> {
  const events: Array<{ event: string | undefined; data: string }> = [];
  const reader = new SseReader((event, data) => events.push({ event, data }));
  reader.push(Buffer.from(text, 'utf8'));
  reader.end();
  return events;
}
