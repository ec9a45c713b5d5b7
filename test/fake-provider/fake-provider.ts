/**
 * A fake LLM provider for tests and benchmarks: node:http on an ephemeral port, speaking the OpenAI
 * (Chat Completions, Responses, embeddings, models) and Anthropic wire formats (JSON and SSE),
 * refusing the way real providers refuse (their real error bodies), hanging or resetting on
 * request, and recording every request it receives.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anthropicMessage,
  anthropicStream,
  bodies,
  openaiCompletion,
  openaiStream,
  type SseEvent,
} from './fake-bodies.ts';
import {
  DEFAULT_ANTHROPIC_MODELS,
  DEFAULT_OPENAI_MODELS,
  embeddings,
  modelById,
  modelList,
} from './fake-models.ts';
import type { ResponsesScript } from './fake-responses.ts';
import { FakeResponsesApi } from './fake-responses-api.ts';
import { unknownFieldRefusal, type UnknownFieldStyle } from './fake-unknown-field.ts';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  raw: Buffer;
  /** Parsed JSON body, or undefined when not JSON. */
  json: Record<string, unknown> | undefined;
}

export type FakeReply =
  /** `after`: the answer goes once it settles (a call a test keeps in flight). */
  | { status?: number; json: unknown; headers?: Record<string, string>; after?: Promise<void> }
  | { status?: number; text: string; headers?: Record<string, string>; after?: Promise<void> }
  | {
      status?: number;
      sse: SseEvent[];
      chunkDelayMs?: number;
      headers?: Record<string, string>;
      resetAfter?: number;
      /** Sends this many events, then holds the stream open until `until` settles. */
      holdAfter?: StreamHold;
    }
  | { hang: true }
  | { reset: true }
  /** A JSON answer whose body breaks off after `sent` (headers promise the whole length). */
  | { truncated: string; sent: number }
  /** A Responses API answer built from the request (JSON or its event stream, as the request asks). */
  | { responses: ResponsesScript };

/** A reply as it goes on the wire (a Responses script already built into JSON or SSE). */
export type WireReply = Exclude<FakeReply, { responses: ResponsesScript }>;

/** A stream held open mid-way, so a test can act while it runs. */
export interface StreamHold {
  events: number;
  until: Promise<void>;
}

export type FakeHandler = (req: RecordedRequest) => FakeReply | undefined;

export interface FakeProviderOptions {
  /** Refuse requests carrying more images than this (format-appropriate "too many images"). */
  imageLimit?: number;
  /** Refuse a request holding a base64 image larger than this many bytes (Anthropic per-image error). */
  maxImageBytes?: number;
  /** Refuse with a context-overflow error when the messages' JSON is longer than this. */
  contextLimitChars?: number;
  /**
   * Top-level body fields this provider does not accept: a model call (Chat Completions, Responses,
   * Messages) carrying one is refused the way a server that validates bodies strictly answers
   * (`style`; see fake-unknown-field.ts), whatever is scripted.
   */
  refusesFields?: { fields: readonly string[]; style: UnknownFieldStyle };
  /** Text of the default answer. */
  answer?: string;
  /** Pieces of the default streamed answer. */
  streamPieces?: string[];
  chunkDelayMs?: number;
  /**
   * How a streamed Responses request is refused: an HTTP error (default), or a 200 stream whose
   * first event after `response.created`/`response.in_progress` is `response.failed` or `error`.
   */
  responsesStreamRefusal?: 'http' | 'response.failed' | 'error';
  /** Model ids `GET /v1/models` lists (OpenAI format); real-looking defaults. */
  openaiModels?: string[];
  /** Model ids `GET /v1/models` lists to a client sending `anthropic-version`. */
  anthropicModels?: string[];
  /**
   * Hold every answer until this many requests have arrived since the last reset: a barrier for
   * tests whose requests must all be under way before the first answer (after 5 s they go anyway,
   * and the test's own assertions say what went wrong).
   */
  holdUntilRequests?: number;
}

export class FakeProvider {
  readonly requests: RecordedRequest[] = [];
  options: FakeProviderOptions;
  private readonly scripted: Array<FakeReply | FakeHandler> = [];
  private server: Server | undefined;
  private readonly sockets = new Set<import('node:net').Socket>();
  /** Set when a client aborted a streamed answer before it ended. */
  abortedStreams = 0;
  /** Answers held by `holdUntilRequests`, released when enough requests have arrived. */
  private held: Array<() => void> = [];
  /** The Responses API routes and the responses created through them. */
  readonly responsesApi = new FakeResponsesApi(() => this.options);

  constructor(options: FakeProviderOptions = {}) {
    this.options = options;
  }

  /** The base URL (no trailing slash), e.g. http://127.0.0.1:40123 */
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Queues replies used, in order, before the default behaviour. */
  script(...replies: Array<FakeReply | FakeHandler>): void {
    this.scripted.push(...replies);
  }

  reset(): void {
    this.requests.length = 0;
    this.scripted.length = 0;
    this.abortedStreams = 0;
    this.responsesApi.stored.clear();
    // Answers held by `holdUntilRequests` go now: the count they waited for starts again.
    for (const release of this.held.splice(0)) release();
  }

  /** Requests to a path (the path without its query, matched exactly). */
  requestsTo(path: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path.split('?')[0] === path);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    let json: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = raw.length ? JSON.parse(raw.toString('utf8')) : undefined;
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
        json = parsed as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    const rec: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      raw,
      json,
    };
    this.requests.push(rec);
    await this.barrier();
    let reply: FakeReply | undefined = this.refusedField(rec);
    while (!reply && this.scripted.length) {
      const next = this.scripted.shift()!;
      reply = typeof next === 'function' ? next(rec) : next;
    }
    const chosen = reply ?? this.defaultReply(rec);
    await this.send(
      res,
      'responses' in chosen ? this.responsesApi.answer(rec.json ?? {}, chosen.responses) : chosen,
    );
  }

  /** The refusal of a body field the provider does not accept (`refusesFields`), if the call carries one. */
  private refusedField(rec: RecordedRequest): FakeReply | undefined {
    const refuses = this.options.refusesFields;
    const path = rec.path.split('?')[0] ?? '';
    if (!refuses || rec.method !== 'POST' || !rec.json) return undefined;
    if (!['/v1/chat/completions', '/v1/responses', '/v1/messages'].includes(path)) return undefined;
    const field = refuses.fields.find((f) => Object.hasOwn(rec.json!, f));
    return field === undefined ? undefined : unknownFieldRefusal(refuses.style, field, rec.json[field]);
  }

  /** Waits, under `holdUntilRequests`, until that many requests have arrived (5 s at most). */
  private async barrier(): Promise<void> {
    const want = this.options.holdUntilRequests;
    if (want === undefined) return;
    if (this.requests.length >= want) {
      for (const release of this.held.splice(0)) release();
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 5000);
      this.held.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private defaultReply(rec: RecordedRequest): FakeReply {
    const path = rec.path.split('?')[0];
    const body = rec.json ?? {};
    const model = typeof body.model === 'string' ? body.model : 'fake-model';
    const anthropicFormat = path === '/v1/messages' || path === '/v1/messages/count_tokens';
    const query = new URL(rec.path, 'http://fake').searchParams;
    const responses = this.responsesApi.route(rec.method, path ?? '', body, query);
    if (responses) return responses;
    const modelsReply = this.modelsReply(
      rec.method,
      path ?? '',
      rec.headers['anthropic-version'] !== undefined,
    );
    if (modelsReply) return modelsReply;
    if (path === '/v1/embeddings' && rec.method === 'POST') return embeddings(body);
    if (path === '/v1/messages/count_tokens') {
      return { json: { input_tokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4) } };
    }
    if (path !== '/v1/chat/completions' && path !== '/v1/messages') {
      return { status: 404, json: { error: { message: `no route ${path}`, type: 'not_found_error' } } };
    }
    // Anthropic refuses an empty text block anywhere in the messages, inside a tool result too.
    if (path === '/v1/messages' && hasEmptyTextBlock(body.messages)) {
      return { status: 400, json: bodies.anthropicEmptyText() };
    }
    const images = countImages(body);
    const { imageLimit, maxImageBytes, contextLimitChars } = this.options;
    if (maxImageBytes !== undefined) {
      for (const img of images) {
        if (img.bytes > maxImageBytes) {
          return { status: 400, json: bodies.anthropicImageTooLarge(img.path, img.bytes, maxImageBytes) };
        }
      }
    }
    if (imageLimit !== undefined && images.length > imageLimit) {
      return {
        status: 400,
        json: anthropicFormat
          ? bodies.anthropicTooManyImages(images.length, imageLimit)
          : bodies.openaiTooManyImages(images.length, imageLimit),
      };
    }
    const size = JSON.stringify(body.messages ?? []).length;
    if (contextLimitChars !== undefined && size > contextLimitChars) {
      const got = Math.ceil(size / 4);
      const max = Math.floor(contextLimitChars / 4);
      return {
        status: 400,
        json: anthropicFormat
          ? bodies.anthropicPromptTooLong(got, max)
          : bodies.openaiContextLength(max, got),
      };
    }
    const answer = this.options.answer ?? 'Hello from the fake provider.';
    const pieces = this.options.streamPieces ?? ['Hello', ' from', ' the', ' fake', ' provider.'];
    const inputTokens = Math.ceil(size / 4);
    if (body.stream === true) {
      // As OpenAI: the usage (and `usage: null` on every other chunk) only when the request asks.
      const includeUsage =
        typeof body.stream_options === 'object' && body.stream_options !== null
          ? (body.stream_options as { include_usage?: boolean }).include_usage === true
          : false;
      return {
        sse: anthropicFormat ? anthropicStream(model, pieces) : openaiStream(model, pieces, includeUsage),
        chunkDelayMs: this.options.chunkDelayMs,
      };
    }
    return {
      json: anthropicFormat
        ? anthropicMessage(model, answer, inputTokens)
        : openaiCompletion(model, answer, inputTokens),
    };
  }

  /** `GET /v1/models` and `GET /v1/models/{id}`, in the caller's format; undefined for other paths. */
  private modelsReply(method: string, path: string, anthropic: boolean): FakeReply | undefined {
    if (method !== 'GET' || !path.startsWith('/v1/models')) return undefined;
    const ids = anthropic
      ? (this.options.anthropicModels ?? DEFAULT_ANTHROPIC_MODELS)
      : (this.options.openaiModels ?? DEFAULT_OPENAI_MODELS);
    if (path === '/v1/models') return { json: modelList(ids, anthropic) };
    const id = /^\/v1\/models\/([^/]+)$/.exec(path)?.[1];
    return id === undefined ? undefined : modelById(ids, decodeURIComponent(id), anthropic);
  }

  private async send(res: ServerResponse, reply: WireReply): Promise<void> {
    if ('hang' in reply) return; // never answer; the socket is destroyed on close()
    if ('reset' in reply) {
      res.socket?.destroy();
      return;
    }
    if ('truncated' in reply) {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(reply.truncated),
      });
      res.write(reply.truncated.slice(0, reply.sent));
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    if ('sse' in reply) {
      res.writeHead(reply.status ?? 200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        ...reply.headers,
      });
      res.flushHeaders();
      let i = 0;
      for (const ev of reply.sse) {
        if (reply.holdAfter !== undefined && i === reply.holdAfter.events) await reply.holdAfter.until;
        if (res.destroyed || res.socket?.destroyed) {
          this.abortedStreams++;
          return;
        }
        if (reply.resetAfter !== undefined && i === reply.resetAfter) {
          res.socket?.destroy();
          return;
        }
        res.write(`${ev.event ? `event: ${ev.event}\n` : ''}data: ${ev.data}\n\n`);
        i++;
        if (reply.chunkDelayMs) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
      }
      res.end();
      return;
    }
    if (reply.after) await reply.after;
    const text = 'json' in reply ? JSON.stringify(reply.json) : reply.text;
    res.writeHead(reply.status ?? 200, {
      'content-type': 'json' in reply ? 'application/json' : 'text/plain',
      'content-length': Buffer.byteLength(text),
      ...reply.headers,
    });
    res.end(text);
  }
}

interface FoundImage {
  path: string;
  bytes: number;
}

/** Images in an OpenAI or Anthropic body, with their wire path and decoded size. */
export function countImages(body: Record<string, unknown>): FoundImage[] {
  const out: FoundImage[] = [];
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const visit = (parts: unknown, path: string) => {
    if (!Array.isArray(parts)) return;
    parts.forEach((p: unknown, j) => {
      if (!p || typeof p !== 'object') return;
      const part = p as Record<string, unknown>;
      const here = `${path}.${j}`;
      if (part.type === 'image') {
        const src = part.source as { type?: string; data?: string } | undefined;
        out.push({
          path: here,
          bytes: src?.type === 'base64' && src.data ? Buffer.byteLength(src.data, 'base64') : 0,
        });
      } else if (part.type === 'image_url') {
        const url = (part.image_url as { url?: string } | undefined)?.url ?? '';
        const comma = url.indexOf(',');
        out.push({
          path: here,
          bytes: url.startsWith('data:') ? Buffer.byteLength(url.slice(comma + 1), 'base64') : 0,
        });
      } else if (part.type === 'tool_result') {
        visit(part.content, `${here}.tool_result.content`);
      }
    });
  };
  messages.forEach((m: unknown, i) => {
    if (m && typeof m === 'object') visit((m as { content?: unknown }).content, `messages.${i}.content`);
  });
  return out;
}

/** True when `messages` holds a text block with empty text, at any depth (a tool result's content too). */
function hasEmptyTextBlock(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasEmptyTextBlock);
  if (typeof value !== 'object' || value === null) return false;
  const block = value as Record<string, unknown>;
  if (block.type === 'text' && block.text === '') return true;
  return hasEmptyTextBlock(block.content);
}
