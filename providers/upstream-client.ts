/**
 * Sends requests to providers through one pooled keep-alive undici Agent. Responses come back with
 * their body as a stream: nothing here buffers a whole answer.
 */
import { Agent, request, errors as undiciErrors } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { secretChunkMasker, secretMasker, type ChunkMasker } from '../lib/mask-secrets.ts';

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
}

export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Readable & { text(): Promise<string> };
}

/** Why an upstream call failed before a status arrived; stable codes for the repair loop. */
export class UpstreamError extends Error {
  constructor(
    readonly code: 'connect' | 'timeout' | 'reset' | 'aborted' | 'redirect',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UpstreamError';
  }
}

export interface UpstreamClientOptions {
  /** Connections per provider origin; keep it above any team's share of calls (SPEC section 14). */
  connections?: number;
  /** The configured provider keys, masked in every answer's headers and body before anyone reads them. */
  secrets?: readonly (string | undefined)[];
}

/** A body already read whole, as a stream that also answers `text()`. */
function bodyOfText(text: string): UpstreamResponse['body'] {
  return Object.assign(Readable.from([Buffer.from(text, 'utf8')]), { text: async () => text });
}

export class UpstreamClient {
  private readonly agent: Agent;
  private readonly mask: (text: string) => string;
  private readonly chunkMasker: (() => ChunkMasker) | undefined;

  constructor(
    private readonly timeouts: UpstreamTimeouts,
    opts: UpstreamClientOptions = {},
  ) {
    this.mask = secretMasker(opts.secrets ?? []);
    this.chunkMasker = secretChunkMasker(opts.secrets ?? []);
    this.agent = new Agent({
      connect: { timeout: timeouts.connectMs },
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 600_000,
      connections: opts.connections ?? 256,
      pipelining: 1,
      headersTimeout: timeouts.firstByteMs,
      bodyTimeout: timeouts.idleMs,
    });
  }

  /**
   * POSTs (or GETs, or DELETEs) `body` to `url`; throws UpstreamError for connection failures, timeouts and
   * redirects (a provider answer never sends the client elsewhere: the route answers 502). Header
   * values come back with the provider keys masked. The body of an answer that is not a 2xx is read
   * here and given back with the provider keys masked; a 2xx body is masked as it streams (an error
   * may come inside a 200 stream), so every reader (the client, the stream's first-event check, the
   * chat log) sees only the masked bytes.
   */
  async send(opts: {
    url: string;
    method?: 'POST' | 'GET' | 'DELETE';
    headers: Record<string, string>;
    body?: Buffer | string;
    signal?: AbortSignal;
  }): Promise<UpstreamResponse> {
    try {
      const res = await request(opts.url, {
        dispatcher: this.agent,
        method: opts.method ?? 'POST',
        headers: opts.headers,
        body: opts.body,
        signal: opts.signal,
        headersTimeout: this.timeouts.firstByteMs,
        bodyTimeout: this.timeouts.idleMs,
      });
      const headers = this.maskedHeaders(res.headers as IncomingHttpHeaders);
      if (res.statusCode >= 300 && res.statusCode < 400) {
        await res.body.dump().catch(() => undefined);
        throw new UpstreamError(
          'redirect',
          `the provider answered ${res.statusCode} (a redirect), which the gateway does not follow`,
        );
      }
      if (res.statusCode >= 200 && res.statusCode < 300) {
        const stream = String(headers['content-type'] ?? '').includes('text/event-stream');
        return {
          status: res.statusCode,
          headers,
          body: stream ? this.masked(res.body) : this.maskedWhole(res.body),
        };
      }
      const text = this.mask(await res.body.text());
      return { status: res.statusCode, headers, body: bodyOfText(text) };
    } catch (e) {
      throw toUpstreamError(e);
    }
  }

  /** `headers` with the provider keys masked in their values (the same object when none holds one). */
  private maskedHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
    let out: IncomingHttpHeaders | undefined;
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined) continue;
      const text = Array.isArray(value) ? value.join('\n') : value;
      if (this.mask(text) === text) continue;
      out ??= { ...headers };
      out[name] = Array.isArray(value) ? value.map(this.mask) : this.mask(text);
    }
    return out ?? headers;
  }

  /**
   * An event stream with the provider keys masked as its chunks are read, with no stream stage in
   * between (a transform per answer cost more than the rest of the stream's handling): iterating
   * the body (`for await`, its iterator) yields masked chunks, and stopping early releases the
   * provider's stream. It is read by iteration only: `pipe` would hand the provider's bytes on as
   * they came, so it throws.
   */
  private masked(body: UpstreamResponse['body']): UpstreamResponse['body'] {
    if (!this.chunkMasker) return body;
    const masker = this.chunkMasker();
    const chunks = body[Symbol.asyncIterator].bind(body);
    const text = body.text.bind(body);
    const mask = this.mask;
    return Object.assign(body, {
      async *[Symbol.asyncIterator]() {
        for await (const chunk of { [Symbol.asyncIterator]: chunks }) {
          const out = masker.push(chunk as Uint8Array);
          if (out) yield out;
        }
        const rest = masker.end();
        if (rest) yield rest;
      },
      text: async () => mask(await text()),
      pipe(): never {
        throw new Error('a masked provider stream is read by iterating it, not piped');
      },
    }) as UpstreamResponse['body'];
  }

  /**
   * A body that is not an event stream (a JSON answer) with the keys masked. Its readers take it
   * whole (`text()`), so it is masked as one string with no stream stage in between (a transform
   * per answer cost more than the rest of the masking); a reader that streams it gets the same
   * masked text, and releases the provider's body when it stops early.
   */
  private maskedWhole(body: UpstreamResponse['body']): UpstreamResponse['body'] {
    if (!this.chunkMasker) return body;
    const mask = this.mask;
    let whole: Promise<string> | undefined;
    const text = () => (whole ??= body.text().then(mask));
    const out = Readable.from(
      (async function* () {
        yield Buffer.from(await text(), 'utf8');
      })(),
    );
    out.on('close', () => {
      if (!body.destroyed) body.destroy();
    });
    return Object.assign(out, { text });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Maps undici and socket errors to UpstreamError codes. */
export function toUpstreamError(e: unknown): UpstreamError {
  if (e instanceof UpstreamError) return e;
  const err = e as { code?: string; name?: string; message?: string };
  if (err?.name === 'AbortError' || err?.code === 'UND_ERR_ABORTED') {
    return new UpstreamError('aborted', 'request aborted', { cause: e });
  }
  if (
    e instanceof undiciErrors.HeadersTimeoutError ||
    e instanceof undiciErrors.BodyTimeoutError ||
    err?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    err?.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return new UpstreamError('timeout', `provider did not answer in time (${err.message ?? err.code})`, {
      cause: e,
    });
  }
  if (e instanceof undiciErrors.ConnectTimeoutError || err?.code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new UpstreamError('connect', 'timed out connecting to the provider', { cause: e });
  }
  if (
    err?.code === 'ECONNREFUSED' ||
    err?.code === 'ENOTFOUND' ||
    err?.code === 'EAI_AGAIN' ||
    err?.code === 'EHOSTUNREACH'
  ) {
    return new UpstreamError('connect', `cannot reach the provider (${err.code})`, { cause: e });
  }
  const cause = (e as { cause?: { code?: string } })?.cause;
  if (cause?.code === 'ECONNREFUSED')
    return new UpstreamError('connect', 'cannot reach the provider (ECONNREFUSED)', { cause: e });
  return new UpstreamError(
    'reset',
    `connection to the provider failed (${err?.code ?? err?.message ?? 'unknown'})`,
    {
      cause: e,
    },
  );
}
