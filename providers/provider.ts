/**
 * What every wire format provides. The pipeline and routes use only this interface; provider
 * differences live in `providers/<format>/`.
 */
import type { ToolRef, Usage } from '../chat-log/format/current.ts';
import type { NormalizedMessage } from '../chat-log/pending-message.ts';
import type { RequestView, WirePath } from './request-view.ts';

export type WireFormat = 'openai' | 'anthropic';

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
  | { kind: 'transient' }
  | { kind: 'other' };

export interface NormalizeOptions {
  /**
   * Normalize only the wire messages from this index on (earlier ones are still read for what
   * later ones refer to, such as tool names, and for the system prompt).
   */
  fromIndex?: number;
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
  usage: Usage | undefined;
  stopReason: string | undefined;
  model: string | undefined;
  /** The provider's id of the answer (Responses `resp_...`), when it has one. */
  responseId?: string;
}

/** Folds a streamed response (SSE events, in order) into a NormalizedResponse. */
export interface StreamAccumulator {
  /** `event` is the SSE `event:` name (undefined when absent); `data` the joined `data:` text. */
  push(event: string | undefined, data: string): void;
  /** True once the stream said it is over (OpenAI `[DONE]` or a finish reason; Anthropic `message_stop`). */
  ended(): boolean;
  result(): NormalizedResponse;
}

/** Error details the gateway renders in a format's error shape. */
export interface GatewayErrorInfo {
  kind: import('../lib/errors.ts').OdaErrorKind;
  message: string;
  param: string | null;
  code: string;
}

/** Everything the shared pipeline and routes need from one wire format. */
export interface FormatAdapter {
  readonly format: WireFormat;
  /** True when pruning defaults to cache-ttl for providers of this format (SPEC section 4). */
  readonly prunesByDefault: boolean;
  /** Request headers that carry the client's provider credential. */
  readonly credentialHeaders: readonly string[];
  createView(body: Record<string, unknown>): RequestView;
  normalizeRequest(body: Record<string, unknown>, opts?: NormalizeOptions): NormalizedRequest;
  normalizeResponse(json: unknown): NormalizedResponse;
  createStreamAccumulator(): StreamAccumulator;
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
}
