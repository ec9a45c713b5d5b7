/**
 * An incremental SSE reader: fed raw chunks as they pass through, it reports each complete event
 * (`event:` name and joined `data:` lines). It only observes; the bytes are forwarded untouched.
 *
 * Lines end with CRLF, LF or a lone CR and a blank line ends an event, as the SSE spec reads them
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation).
 * Each chunk is scanned once, from where the last one stopped: a line that spans many chunks (a
 * 16 MB delta) costs its length, not its length times its chunks.
 */
export class SseReader {
  /** The current line's text so far, in the pieces it arrived in. */
  private partial: string[] = [];
  /** The last chunk ended with CR: an LF starting the next one belongs to that line end. */
  private afterCr = false;
  private event: string | undefined;
  private data: string[] = [];
  private readonly decoder = new TextDecoder();

  constructor(private readonly onEvent: (event: string | undefined, data: string) => void) {}

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
    if (start < text.length) this.partial.push(text.slice(start));
  }

  private takePartial(tail: string): string {
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
    if (line.startsWith(':')) return; // comment, e.g. ": OPENROUTER PROCESSING"
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }

  private dispatch(): void {
    const { event, data } = this;
    this.event = undefined;
    this.data = [];
    if (data.length || event) this.onEvent(event, data.join('\n'));
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
