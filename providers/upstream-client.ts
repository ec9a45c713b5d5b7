/**
 * Sends requests to providers through one pooled keep-alive undici Agent. Responses come back with
 * their body as a stream: nothing here buffers a whole answer. A body the gateway does read whole
 * (an error body; a JSON answer its reader takes with `text()`) is read against a cap, past which
 * the gateway stops reading, closes the provider's connection and fails the call.
 */
import { Agent, request, errors as undiciErrors } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
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

/**
 * Most bytes of a provider's error body (an answer that is not a 2xx) the gateway reads: real ones
 * are a few hundred bytes of JSON or an HTML error page. Past it the call fails (a 502).
 */
export const MAX_ERROR_BODY_BYTES = 4 * 1024 * 1024;

/**
 * Most bytes of a 2xx answer that is not an event stream which is read whole (`text()`: a
 * non-streamed model call's answer, logged before it is sent; a token count). Generous: a
 * completion's JSON is far smaller, and answers passed on as they arrive (embeddings, stored
 * responses) are not read whole and have no cap.
 */
export const MAX_WHOLE_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * True when an answer's headers name an event stream. Media types are case-insensitive (RFC 9110,
 * 8.3.1): `Text/Event-Stream; charset=UTF-8` is a stream too, passed on as it arrives.
 */
export function isEventStream(headers: IncomingHttpHeaders): boolean {
  return String(headers['content-type'] ?? '')
    .toLowerCase()
    .includes('text/event-stream');
}

/** Why an upstream call failed; stable codes for the repair loop. */
export class UpstreamError extends Error {
  constructor(
    /** `too-large`: a body the gateway reads whole was longer than its cap (the connection is closed). */
    readonly code: 'connect' | 'timeout' | 'reset' | 'aborted' | 'redirect' | 'too-large' | 'encoding',
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

/**
 * Reads `body` whole as UTF-8 (its chunks as `chunks` yields them: the provider's own bytes), at
 * most `limit` bytes: past it (or when `content-length` already says more) it stops, destroys the
 * body, which closes the provider's connection, and throws a `too-large` UpstreamError saying
 * `what` exceeded the limit.
 */
async function readCapped(
  body: Readable,
  chunks: () => AsyncIterator<unknown>,
  headers: IncomingHttpHeaders,
  limit: number,
  what: string,
): Promise<string> {
  const tooLarge = () => {
    body.destroy();
    return new UpstreamError('too-large', `${what} exceeded ${limit} bytes`);
  };
  const declared = Number(headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const read: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of { [Symbol.asyncIterator]: chunks }) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    bytes += buf.length;
    if (bytes > limit) throw tooLarge();
    read.push(buf);
  }
  return Buffer.concat(read, bytes).toString('utf8');
}

/** Decoders for the content codings a provider may use although the gateway asked for none. */
const DECODERS: Record<string, () => Transform> = {
  gzip: () => createGunzip(),
  'x-gzip': () => createGunzip(),
  deflate: () => createInflate(),
  br: () => createBrotliDecompress(),
};

/**
 * `body` decoded from the content coding its headers name (gzip, deflate, br), with headers that no
 * longer name a coding or a length (the decoded length is not known); as it is when it names none.
 * A coding the gateway cannot decode (zstd, or several) is a failed call (`encoding`), never bytes
 * passed on under a content type they are not.
 */
function decodedBody(
  body: UpstreamResponse['body'],
  headers: IncomingHttpHeaders,
): { body: UpstreamResponse['body']; headers: IncomingHttpHeaders } {
  const coding = String(headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  if (coding === '' || coding === 'identity') return { body, headers };
  const decoder = DECODERS[coding];
  if (!decoder) {
    // Dropped unread: the provider's connection closes (undici reports that as an error, which
    // nobody is left to hear).
    body.on('error', () => undefined);
    body.destroy();
    throw new UpstreamError(
      'encoding',
      `the provider answered with content-encoding "${coding.slice(0, 40)}", which the gateway cannot decode (it asks for identity)`,
    );
  }
  const { 'content-encoding': _coding, 'content-length': _length, ...rest } = headers;
  const decoded = body.pipe(decoder());
  // The provider's stream is released when the decoded one is (a client gone, a cap reached).
  decoded.on('close', () => {
    if (!body.destroyed) body.destroy();
  });
  body.on('error', (err) => decoded.destroy(err));
  // Every reader iterates the decoded stream: what the decoder fails on is said in the provider's
  // terms (its compressed answer cut short, or not in the coding it named), not as a zlib code.
  const chunks = decoded[Symbol.asyncIterator].bind(decoded);
  async function* read(): AsyncGenerator<Buffer> {
    try {
      for await (const c of { [Symbol.asyncIterator]: chunks }) yield c as Buffer;
    } catch (e) {
      throw decodeFailure(e, coding);
    }
  }
  const text = async (): Promise<string> => {
    const out: Buffer[] = [];
    for await (const c of read()) out.push(c);
    return Buffer.concat(out).toString('utf8');
  };
  return {
    body: Object.assign(decoded, { text, [Symbol.asyncIterator]: read }) as UpstreamResponse['body'],
    headers: rest,
  };
}

/**
 * What a decoder's failure means for the answer: the compressed data ended before its end (zlib's
 * `Z_BUF_ERROR`, "unexpected end of file": the provider cut its answer short, like a connection
 * that broke) or it is not data of that coding (corrupt). Any other error (the provider's
 * connection itself) is given back as it came.
 */
function decodeFailure(e: unknown, coding: string): unknown {
  const err = e as { code?: unknown; errno?: unknown; message?: unknown };
  if (e instanceof UpstreamError || typeof err?.errno !== 'number' || typeof err.code !== 'string') return e;
  if (err.code === 'Z_BUF_ERROR')
    return new UpstreamError(
      'reset',
      `the provider's compressed answer (${coding}) ended before its end: it was cut short`,
      { cause: e },
    );
  if (err.code.startsWith('Z_') || err.code.startsWith('ERR__ERROR_'))
    return new UpstreamError(
      'encoding',
      `the provider's answer is not valid ${coding} data (${String(err.message)})`,
      { cause: e },
    );
  return e;
}

/** A body already read whole, as a stream that also answers `text()`. */
function bodyOfText(text: string): UpstreamResponse['body'] {
  return Object.assign(Readable.from([Buffer.from(text, 'utf8')]), { text: async () => text });
}

/** Request headers that carry a credential, and how to read the secret out of each. */
const CREDENTIAL_HEADERS: ReadonlyArray<[string, (value: string) => string]> = [
  ['authorization', (v) => v.replace(/^\s*bearer\s+/i, '').trim()],
  ['x-api-key', (v) => v.trim()],
  ['api-key', (v) => v.trim()],
];

/** How one answer is masked: as text, and chunk by chunk. */
interface Maskers {
  mask: (text: string) => string;
  chunkMasker: (() => ChunkMasker) | undefined;
}

export class UpstreamClient {
  private readonly agent: Agent;
  private readonly secrets: readonly (string | undefined)[];
  private readonly maskers: Maskers;

  constructor(
    private readonly timeouts: UpstreamTimeouts,
    opts: UpstreamClientOptions = {},
  ) {
    this.secrets = opts.secrets ?? [];
    this.maskers = { mask: secretMasker(this.secrets), chunkMasker: secretChunkMasker(this.secrets) };
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
   * here (at most MAX_ERROR_BODY_BYTES, else a `too-large` UpstreamError) and given back with the
   * provider keys masked; a 2xx body is masked as it streams (an error may come inside a 200
   * stream), so every reader (the client, the stream's first-event check, the chat log) sees only
   * the masked bytes, and a 2xx JSON answer read whole (`text()`) is read against
   * MAX_WHOLE_ANSWER_BYTES.
   */
  async send(opts: {
    url: string;
    method?: 'POST' | 'GET' | 'DELETE';
    headers: Record<string, string>;
    /** Parts are written one after another (a spliced body's slices of the client's bytes). */
    body?: Buffer | string | readonly Buffer[];
    signal?: AbortSignal;
  }): Promise<UpstreamResponse> {
    const maskers = this.maskersFor(opts.headers);
    try {
      const res = await request(opts.url, {
        dispatcher: this.agent,
        method: opts.method ?? 'POST',
        headers: opts.headers,
        // undici documents an Iterable body (written part by part); its type declarations lag.
        body: opts.body as Buffer | string | undefined,
        signal: opts.signal,
        headersTimeout: this.timeouts.firstByteMs,
        bodyTimeout: this.timeouts.idleMs,
      });
      const headers = maskedHeaders(res.headers as IncomingHttpHeaders, maskers.mask);
      if (res.statusCode >= 300 && res.statusCode < 400) {
        await res.body.dump().catch(() => undefined);
        throw new UpstreamError(
          'redirect',
          `the provider answered ${res.statusCode} (a redirect), which the gateway does not follow`,
        );
      }
      // The gateway asks for `identity`; a provider (or a proxy before it) that compresses anyway
      // is decoded here, so every reader sees the answer's own bytes.
      const decoded = decodedBody(res.body as unknown as UpstreamResponse['body'], headers);
      if (res.statusCode >= 200 && res.statusCode < 300) {
        const stream = isEventStream(decoded.headers);
        const raw = decoded.body;
        // The provider's bytes as they come, before `masked` makes iteration yield masked chunks.
        const chunks = raw[Symbol.asyncIterator].bind(raw);
        const body = masked(raw, maskers);
        if (!stream) {
          // Its readers take a JSON answer whole: masked as one string, read against the cap.
          const what = `the provider's answer (HTTP ${res.statusCode}) read whole`;
          body.text = () =>
            readCapped(raw, chunks, decoded.headers, MAX_WHOLE_ANSWER_BYTES, what).then(maskers.mask);
        }
        return { status: res.statusCode, headers: decoded.headers, body };
      }
      const text = await readCapped(
        decoded.body,
        decoded.body[Symbol.asyncIterator].bind(decoded.body),
        decoded.headers,
        MAX_ERROR_BODY_BYTES,
        `the provider's error body (HTTP ${res.statusCode})`,
      );
      return { status: res.statusCode, headers: decoded.headers, body: bodyOfText(maskers.mask(text)) };
    } catch (e) {
      throw toUpstreamError(e);
    }
  }

  /**
   * The maskers of one call: the configured provider keys, and also the credential the client
   * sent when it goes upstream as is (a provider without a configured key takes the client's own):
   * a provider's error body echoing it must not reach the chat log, which others may read. The
   * client's key is masked in headers, error bodies and answers read whole, not chunk by chunk in a
   * 2xx stream: a provider that accepted the key does not echo it there, and a masker on every
   * streamed chunk is the costliest thing a stream could add for every pass-through call.
   */
  private maskersFor(headers: Record<string, string>): Maskers {
    let extra: string[] | undefined;
    for (const [name, read] of CREDENTIAL_HEADERS) {
      const value = headers[name];
      if (value === undefined) continue;
      const secret = read(value);
      if (!this.secrets.includes(secret)) (extra ??= []).push(secret);
    }
    if (!extra) return this.maskers;
    const all = [...this.secrets, ...extra];
    return { mask: secretMasker(all), chunkMasker: this.maskers.chunkMasker };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** `headers` with the secrets masked in their values (the same object when none holds one). */
function maskedHeaders(headers: IncomingHttpHeaders, mask: (text: string) => string): IncomingHttpHeaders {
  let out: IncomingHttpHeaders | undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join('\n') : value;
    if (mask(text) === text) continue;
    out ??= { ...headers };
    out[name] = Array.isArray(value) ? value.map(mask) : mask(text);
  }
  return out ?? headers;
}

/**
 * A 2xx body with the secrets masked as its chunks are read, with no stream stage in between (a
 * transform per answer cost more than the rest of the stream's handling): iterating the body
 * (`for await`, its iterator) yields masked chunks, and stopping early releases the provider's
 * stream; `text()` masks the whole text as one string (a JSON answer's readers take it whole). It
 * is read by iteration only: `pipe` would hand the provider's bytes on as they came, so it throws.
 */
function masked(body: UpstreamResponse['body'], maskers: Maskers): UpstreamResponse['body'] {
  if (!maskers.chunkMasker) return body;
  const masker = maskers.chunkMasker();
  const chunks = body[Symbol.asyncIterator].bind(body);
  const text = body.text.bind(body);
  const mask = maskers.mask;
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

/** Maps undici and socket errors to UpstreamError codes. */
export function toUpstreamError(e: unknown): UpstreamError {
  if (e instanceof UpstreamError) return e;
  const err = e as { code?: string; name?: string; message?: string };
  if (err?.name === 'AbortError' || err?.code === 'UND_ERR_ABORTED') {
    return new UpstreamError('aborted', 'request aborted', { cause: e });
  }
  // Each message names the setting that ran out, so a log reader knows which one to look at.
  if (e instanceof undiciErrors.HeadersTimeoutError || err?.code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new UpstreamError('timeout', 'provider did not answer in time (timeouts.firstByteMs)', {
      cause: e,
    });
  }
  if (e instanceof undiciErrors.BodyTimeoutError || err?.code === 'UND_ERR_BODY_TIMEOUT') {
    return new UpstreamError(
      'timeout',
      'provider sent nothing more in time (timeouts.idleMs between two chunks of its answer)',
      { cause: e },
    );
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
