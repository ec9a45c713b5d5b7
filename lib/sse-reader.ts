/**
 * An incremental SSE reader: fed raw chunks as they pass through, it reports each complete event
 * (`event:` name and joined `data:` lines). It only observes; the bytes are forwarded untouched.
 */
export class SseReader {
  private buffer = '';
  private readonly decoder = new TextDecoder();

  constructor(private readonly onEvent: (event: string | undefined, data: string) => void) {}

  push(chunk: Uint8Array): void {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    for (;;) {
      const m = /\r\n\r\n|\n\n|\r\r/.exec(this.buffer);
      if (!m) break;
      const block = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.dispatch(block);
    }
  }

  /** Flushes a final event that had no blank line after it. */
  end(): void {
    this.buffer += this.decoder.decode();
    if (this.buffer.trim()) this.dispatch(this.buffer);
    this.buffer = '';
  }

  private dispatch(block: string): void {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split(/\r\n|\n|\r/)) {
      if (line.startsWith(':')) continue; // comment, e.g. ": OPENROUTER PROCESSING"
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
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
