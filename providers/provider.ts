/**
 * What every wire format provides. The pipeline and routes use only this interface; provider
 * differences live in `providers/<format>/`.
 */
import type { ToolRef, Usage } from '../chat-log/format/current.ts';
import type { NormalizedMessage } from '../chat-log/pending-message.ts';
import type { RequestView, ScannedBody, WirePath } from './request-view.ts';

/** A wire format the gateway speaks to clients (Responses is served by `openai`-format providers). */
export type WireFormat = 'openai' | 'anthropic' | 'responses';

/** What a refusal from a provider means for the repair loop. */
export type Refusal =
  | { kind: 'context-overflow' }
  | {
      kind: 'image-limit';
      /** When the message states counts ("N > M"): how many were sent and how many are allowed. */
      count?: { sent: number; max: number };
      /** When the message names one image (a per-image size or dimension error). */
      imagePath?: WirePath;
    }
  /**
   * The provider does not accept `prompt_cache_key` (an unknown, unsupported or extra field to it):
   * repaired by taking out a key the gateway added, never one the client set.
   */
  | { kind: 'cache-key-refused' }
  /**
   * The provider does not take `stream_options` (Chat Completions): repaired by taking out the
   * `include_usage` the gateway asked for, never what the client set.
   */
  | { kind: 'stream-options-refused' }
  | { kind: 'transient' }
  | { kind: 'other' };

export interface NormalizeOptions {
  /**
   * Normalize only the wire messages from this index on (earlier ones are still read for what
   * later ones refer to, such as tool names, and for the system prompt).
   */
  fromIndex?: number;
  /**
   * The request's tool references when the caller already knows them (the same tool definitions,
   * byte for byte, as an earlier request's): the definitions are then not digested again.
   */
  tools?: readonly ToolRef[];
}

/** The normalized form of a request body, for the chat log. */
export interface NormalizedRequest {
  model: string;
  /** System prompt text (all system parts joined), when present. */
  system: string | undefined;
  /** Conversation messages in order (system excluded). */
  messages: NormalizedMessage[];
  /** Tools by name and sha256 digest of their canonical JSON definition. */
  tools: ToolRef[];
  /** Every other top-level field, as sent. */
  settings: Record<string, unknown>;
  stream: boolean;
}

/** The normalized result of a model call. */
export interface NormalizedResponse {
  message: NormalizedMessage;
  /**
   * The answer as the log keeps it when it is several messages (Responses: one per output item,
   * normalized as the same item is when sent back in `input`); `message` then merges their content.
   */
  messages?: NormalizedMessage[];
  usage: Usage | undefined;
  stopReason: string | undefined;
  model: string | undefined;
  /** The provider's id of the answer (Responses `resp_...`), when it has one. */
  responseId?: string;
  /** The provider's ids of the answer's output items (Responses `msg_...`, `fc_...`), when it stores them. */
  itemIds?: string[];
}

/** Folds a streamed response (SSE events, in order) into a NormalizedResponse. */
export interface StreamAccumulator {
  /** `event` is the SSE `event:` name (undefined when absent); `data` the joined `data:` text. */
  push(event: string | undefined, data: string): void;
  /** True once the stream said it is over (OpenAI `[DONE]` or a finish reason; Anthropic `message_stop`). */
  ended(): boolean;
  result(): NormalizedResponse;
  /**
   * The provider's id of the answer as soon as an event has named it (Responses: the first
   * `response.created`), cheaply, without folding the answer; absent for formats without stored answers.
   */
  responseId?(): string | undefined;
  /**
   * The provider's own word, inside a 2xx stream, that the answer failed (Responses
   * `response.failed` or an `error` event; Anthropic's `error` event): its message, or undefined.
   * A stream that closes normally after such an event delivered a failed answer, not a whole one.
   */
  failure?(): string | undefined;
  /**
   * The type (or code) the provider gave that failure (Anthropic `overloaded_error`, a Chat
   * Completions error's `type` or `code`, a Responses error's `code`), when it gave one.
   */
  failureType?(): string | undefined;
  /**
   * About how many characters of the answer it holds (text, reasoning, tool-call arguments, the
   * items and events it keeps whole): what the log's copy of a stream costs, whatever the size of
   * the stream's wire.
   */
  held(): number;
  /**
   * Lets go of the answer's content and keeps none that comes later (an answer too large to log);
   * what says how the stream ended (its end marker, usage, stop reason, failure, ids) is still kept.
   */
  dropContent(): void;
}

/** Error details the gateway renders in a format's error shape. */
export interface GatewayErrorInfo {
  kind: import('../lib/errors.ts').OdaErrorKind;
  message: string;
  param: string | null;
  code: string;
}

/** What the session logic reads of a request to tell a session's conversations apart. */
export interface RequestTraits {
  /** Tool definitions the request offers. */
  tools: number;
  /** Conversation messages (or input items), system and developer messages not counted. */
  messages: number;
  /** True when the request asks for structured output (a JSON schema or JSON mode). */
  structuredOutput: boolean;
  /** The output token cap the request sets, when it sets one. */
  maxTokens: number | undefined;
}

/** One SSE event as read from a stream: its `event:` name (undefined when absent) and joined `data:`. */
export interface SseEventText {
  event: string | undefined;
  data: string;
}

/**
 * What the first events of a stream say (`peekStreamStart`): `pending` while nothing of the answer
 * has come, `output` once it has (pass the stream on), `failed` when the provider refused inside
 * the stream before any output, with the HTTP status and error body it would have answered.
 */
export type StreamStart =
  | { readonly kind: 'pending' }
  | { readonly kind: 'output' }
  | { readonly kind: 'failed'; readonly status: number; readonly bodyText: string };

/** Everything the shared pipeline and routes need from one wire format. */
export interface FormatAdapter {
  readonly format: WireFormat;
  /** True when pruning defaults to cache-ttl for providers of this format (SPEC section 4). */
  readonly prunesByDefault: boolean;
  /**
   * True when the provider keeps answers that later requests name by id (Responses'
   * `previous_response_id`, `GET /v1/responses/{id}`): the gateway then remembers each answer's chat.
   */
  readonly storesResponses?: boolean;
  /** Request headers that carry the client's provider credential. */
  readonly credentialHeaders: readonly string[];
  /** `scanned`: what the shape scan of the bytes `body` was parsed from found, to skip a walk. */
  createView(body: Record<string, unknown>, scanned?: ScannedBody): RequestView;
  normalizeRequest(body: Record<string, unknown>, opts?: NormalizeOptions): NormalizedRequest;
  normalizeResponse(json: unknown): NormalizedResponse;
  createStreamAccumulator(): StreamAccumulator;
  /**
   * For formats whose streams carry usage only when asked (Chat Completions): true for the SSE event
   * (its bytes) that carries only the usage, which a client that did not ask is not sent.
   */
  isUsageOnlyEvent?(event: Buffer): boolean;
  /**
   * The provider's message when a 2xx JSON answer says the call failed (an error body sent with
   * 200, a failed response); undefined for an answer.
   */
  answerFailure(json: unknown): string | undefined;
  /** Classifies a refusal from status, headers and body text; `imageCount` = images the request carried. */
  classifyRefusal(status: number, bodyText: string, imageCount: number): Refusal;
  /** The format's error body for an error the gateway raises. */
  errorBody(info: GatewayErrorInfo): unknown;
  /** Headers that authenticate the gateway's own provider key. */
  authHeaders(apiKey: string): Record<string, string>;
  /**
   * The provider path (appended to its `baseUrl`) for one of the gateway's fixed routes, such as
   * `/v1/messages`. Never given the client's request target.
   */
  apiPath(routePath: string): string;
  /**
   * Checks the body's shape at the edge and returns its model; throws a 400 `OdaError` naming the
   * field (`messages must be an array`, `input must be a string or an array`).
   */
  parseBody(body: Record<string, unknown>): { model: string };
  /**
   * For formats whose provider may refuse inside a 200 stream before any output (Responses): reads
   * the stream's first events. Absent: a 200 stream is always output.
   */
  peekStreamStart?(events: readonly SseEventText[]): StreamStart;
  /** The wire list the chat log compares with its history (`messages`; Responses: `input` items). */
  wireMessages(body: Record<string, unknown>): readonly unknown[];
  /** A shallow copy of `body` whose wire list is `messages` (everything else shared). */
  withWireMessages(body: Record<string, unknown>, messages: readonly unknown[]): Record<string, unknown>;
  /** What the session logic reads of a request (SPEC section 10). */
  requestTraits(body: Record<string, unknown>): RequestTraits;
}
