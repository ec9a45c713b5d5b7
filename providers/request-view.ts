import type { ImageSource } from '../chat-log/pending-message.ts';

/**
 * The per-format accessor the mechanisms (pruning, trimming, image set-aside, image replay) use to
 * read and edit a request body *as sent*, in place. Each wire format implements it in
 * `providers/<format>/request-view.ts`. Everything a view does not own (unknown fields,
 * `cache_control`, ordering) is left untouched, so an unchanged request serialises to the same
 * JSON and a changed one differs only in the parts a mechanism replaced.
 */

/** Roles as the mechanisms see them, whatever the wire format calls them. */
export type ViewRole = 'system' | 'user' | 'assistant' | 'tool';

/** One editable text part. `set` writes through to the request body. */
export interface TextSlot {
  readonly text: string;
  set(text: string): void;
}

/** Where an image sits, as a path of keys from the body root (e.g. ['messages', 3, 'content', 1]). */
export type WirePath = ReadonlyArray<string | number>;

export type { ImageSource };

/** One image the model would receive. */
export interface ImageRef {
  /** Index of the message that holds it (for OpenAI: in `messages`; for Anthropic: in `messages`). */
  readonly messageIndex: number;
  /** Path of the image part itself in the body. */
  readonly path: WirePath;
  /** True when the image sits inside a tool result. */
  readonly inToolResult: boolean;
  readonly source: ImageSource;
  /**
   * True when replacing it leaves an image in its place (a computer-use screenshot must stay an image,
   * so a placeholder goes there): setting it aside makes the request smaller, but the provider still
   * counts an image.
   */
  readonly keepsImageSlot?: boolean;
  /** Replaces this image part, in place, by a text part holding `text`. */
  replaceWithText(text: string): void;
}

/** One tool result the model would receive. */
export interface ToolResultRef {
  readonly messageIndex: number;
  /** `tool_call_id` (OpenAI) or `tool_use_id` (Anthropic). */
  readonly callId: string;
  /**
   * The name of the tool whose call this answers: the nearest call before it with its call id (a
   * server may hand the same id out again, for another tool, later in the chat).
   */
  readonly toolName: string | undefined;
  readonly isError: boolean;
  /** Text parts in order; string content counts as one part. */
  readonly texts: readonly TextSlot[];
  /** Image parts inside the result, in order. */
  readonly images: readonly ImageRef[];
}

/** One message, for turn counting and measuring. */
export interface MessageRef {
  readonly index: number;
  readonly role: ViewRole;
  /** True when the message holds tool results (OpenAI `tool` role, Anthropic user `tool_result`s). */
  readonly hasToolResults: boolean;
  /** True when the message holds something besides tool results (a real user turn). */
  readonly hasOwnContent: boolean;
  /** Plain text parts of the message (not tool results), editable. */
  readonly texts: readonly TextSlot[];
}

/**
 * One edit made through the view, reported to its edit listener after the body changed: a text part
 * rewritten (`before` -> `after`), or an image part replaced by the text `after`. What each mechanism
 * removed from a request is accounted from these.
 */
export type ViewEdit =
  | { readonly kind: 'text'; readonly before: string; readonly after: string }
  | { readonly kind: 'image'; readonly after: string };

/**
 * Where the gateway may put a prompt-cache breakpoint of its own (SPEC section 11): the last
 * cacheable block of the last message; of the previous turn (the last message before the newest
 * assistant message, where the previous request ended); of the system prompt (or, without one, of
 * the tool definitions).
 */
export type BreakpointPlace = 'last-message' | 'previous-turn' | 'system';

/** How a wire format asks its provider for prompt caching. */
export type PromptCachingStyle = 'breakpoints' | 'key';

/**
 * Receives what the size estimate counts, message by message, as the view walks the body (no
 * list is built: the estimate runs on every request).
 */
export interface MeasureSink {
  /** The next element of the message list starts (called for every element, in order). */
  message?(): void;
  /** A text the model reads: text, reasoning, tool-call arguments, tool-result text (per part). */
  text(text: string): void;
  /** An image the model sees. */
  image(): void;
}

/** What the estimate counts in one message (as gathered by `measureEach`). */
export interface MessageMeasure {
  /** Text, reasoning, tool-call arguments and tool-result text, one entry per part. */
  readonly texts: readonly string[];
  readonly images: number;
}

/** What `measure` reports, gathered per message: entry i is element i of the message list. */
export function measureEach(view: Pick<RequestView, 'measure'>): MessageMeasure[] {
  const out: Array<{ texts: string[]; images: number }> = [];
  const current = () => {
    const last = out[out.length - 1];
    if (!last) throw new Error('measure reported a text or image before any message');
    return last;
  };
  view.measure({
    message: () => out.push({ texts: [], images: 0 }),
    text: (text) => current().texts.push(text),
    image: () => (current().images += 1),
  });
  return out;
}

export interface RequestView {
  /** The body object the view edits in place. */
  readonly body: Record<string, unknown>;
  readonly model: string;
  /** True once any setter or replace has changed the body. */
  readonly changed: boolean;
  messages(): MessageRef[];
  /** Every tool result, in message order. */
  toolResults(): ToolResultRef[];
  /** Every image the model would receive, oldest first (user messages and tool results). */
  images(): ImageRef[];
  /** Reports what the size estimate counts, message by message (system prompt and tool definitions excluded). */
  measure(sink: MeasureSink): void;
  /** The longest prompt-cache TTL the request's own markers ask for, if any (Anthropic `cache_control.ttl`). */
  cacheTtlHint(): '5m' | '1h' | undefined;

  // Prompt caching and edit reporting (SPEC section 11). Optional, so a view that lacks them (a
  // format still being built, a read-only view over the log) simply gets no prompt caching and no
  // per-mechanism accounting.

  /**
   * How the format asks for prompt caching: `cache_control` breakpoints on blocks (Anthropic) or a
   * `prompt_cache_key` routing key (OpenAI Chat Completions and Responses).
   */
  readonly promptCachingStyle?: PromptCachingStyle;
  /** True when the request carries a `cache_control` marker anywhere (top level, tools, system, messages). */
  hasCacheMarkers?(): boolean;
  /**
   * Puts a `{type: 'ephemeral'}` breakpoint on the last block at `place` that accepts one (a string
   * content becomes one text block); false when there is none or the format has no breakpoints.
   */
  addCacheBreakpoint?(place: BreakpointPlace): boolean;
  /**
   * Asks for the provider's request-level automatic caching (Anthropic's top-level
   * `cache_control`); false when the format has none.
   */
  setAutomaticCaching?(): boolean;
  /** The request's `prompt_cache_key` when it is a non-empty string. */
  promptCacheKey?(): string | undefined;
  /** Sets `prompt_cache_key` unless the request has one; false when it has or the format has no such field. */
  setPromptCacheKey?(key: string): boolean;
  /**
   * Takes back the key `setPromptCacheKey` set, leaving the member as the client sent it (absent, or
   * null); false when the view set none (a key the client set is never taken out).
   */
  removeAddedPromptCacheKey?(): boolean;
  /**
   * Asks the provider for a streamed answer's usage (Chat Completions `stream_options.include_usage:
   * true`) when the request streams and does not ask for it; false when it is no stream, already
   * asks, or the format sends usage unasked (SPEC section 11).
   */
  askStreamUsage?(): boolean;
  /**
   * Takes back the ask `askStreamUsage` made, leaving `stream_options` as the client sent it; says
   * whether the options were all the view's (`whole`: the client sent none, or null) or the ask was
   * merged into the client's own (`merged`); undefined when the view made none.
   */
  removeAddedStreamUsage?(): 'whole' | 'merged' | undefined;
  /** Calls `listener` after every edit made through the view from now on (undefined stops it). */
  onEdit?(listener: ((edit: ViewEdit) => void) | undefined): void;
  /**
   * Where the view's edits so far went, so the body can be sent as the client's bytes with only
   * those values written again. A view that does not keep track lacks it (its body is written whole).
   */
  editedPlaces?(): EditedPlaces;
}

/** The places a view's edits changed. */
export interface EditedPlaces {
  /** The top-level member that holds the messages (`messages`). */
  readonly list: string;
  /** Elements of that list, by index. */
  readonly messages: ReadonlySet<number>;
  /** Top-level members whose value changed or that the view added (such as `system`, `tools`). */
  readonly members: ReadonlySet<string>;
}

/**
 * What the gateway's scan of a body's bytes (done before parsing, for its limits) found that a
 * request view can use to skip a walk of the whole parsed body.
 */
export interface ScannedBody {
  /** True when some object of the body has a key that reads `cache_control` (escapes decoded). */
  readonly cacheControlKey: boolean;
}
