/**
 * A provider may refuse inside a 200 stream before any output (the Responses API opens its stream,
 * then sends `response.failed` or `error`). Until output has come, such a stream is read here, not
 * passed on: a refusal becomes an ordinary refused answer the repair loop can act on, and a stream
 * that starts with output is handed on whole, the bytes read so far first.
 */
import { Readable } from 'node:stream';
import type { FormatAdapter, SseEventText } from '../../providers/provider.ts';
import { isEventStream, toUpstreamError, type UpstreamResponse } from '../../providers/upstream-client.ts';
import { SseReader } from '../../lib/sse-reader.ts';

/** Most bytes read ahead while waiting for the first output event. */
const MAX_PEEK_BYTES = 1024 * 1024;

function withText(body: Readable): UpstreamResponse['body'] {
  const b = body as UpstreamResponse['body'];
  b.text = async () => {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.from(c as Uint8Array));
    return Buffer.concat(chunks).toString('utf8');
  };
  return b;
}

/** `res` as it should enter the repair loop: a refusal in the stream's first events becomes the status it stands for. */
export async function peekStreamStart(
  adapter: FormatAdapter,
  res: UpstreamResponse,
): Promise<UpstreamResponse> {
  const peek = adapter.peekStreamStart;
  if (!peek || res.status < 200 || res.status >= 300) return res;
  if (!isEventStream(res.headers)) return res;

  const events: SseEventText[] = [];
  const reader = new SseReader((event, data) => events.push({ event, data }));
  const read: Buffer[] = [];
  let bytes = 0;
  const it = res.body[Symbol.asyncIterator]();
  let ended = false;
  for (;;) {
    let next: IteratorResult<Uint8Array>;
    try {
      next = (await it.next()) as IteratorResult<Uint8Array>;
    } catch (e) {
      // Nothing reached the client yet: a stream lost here is a failed attempt like any other.
      throw toUpstreamError(e);
    }
    if (next.done) {
      ended = true;
      reader.end();
    } else {
      const chunk = Buffer.from(next.value);
      read.push(chunk);
      bytes += chunk.length;
      reader.push(chunk);
    }
    const start = peek(events);
    if (start.kind === 'failed') {
      res.body.destroy();
      const headers = { ...res.headers, 'content-type': 'application/json' };
      delete headers['content-length'];
      return { status: start.status, headers, body: withText(Readable.from([Buffer.from(start.bodyText)])) };
    }
    if (start.kind === 'output' || ended || bytes >= MAX_PEEK_BYTES) break;
  }
  // The events read ahead are done with, and the bytes once replayed: neither is held for the rest
  // of the stream.
  events.length = 0;
  async function* replay(): AsyncGenerator<Buffer> {
    yield* read.splice(0);
    if (ended) return;
    for (;;) {
      const next = (await it.next()) as IteratorResult<Uint8Array>;
      if (next.done) return;
      yield Buffer.from(next.value);
    }
  }
  const body = withText(Readable.from(replay()));
  // Destroying the replay (client gone) must release the provider's stream too.
  body.on('close', () => {
    if (!res.body.destroyed) res.body.destroy();
  });
  return { status: res.status, headers: res.headers, body };
}
