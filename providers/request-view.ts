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
  /** Replaces this image part, in place, by a text part holding `text`. */
  replaceWithText(text: string): void;
}

/** One tool result the model would receive. */
export interface ToolResultRef {
  readonly messageIndex: number;
  /** `tool_call_id` (OpenAI) or `tool_use_id` (Anthropic). */
  readonly callId: string;
  /** The name of the tool whose call this answers, found from the matching assistant tool call. */
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

/** What the estimate counts in one message. */
export interface MessageMeasure {
  /** Text, reasoning, tool-call arguments and tool-result text, concatenated per part. */
  readonly texts: readonly string[];
  readonly images: number;
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
  /** What the size estimate counts, per message (system prompt and tool definitions excluded). */
  measure(): MessageMeasure[];
  /** The longest prompt-cache TTL the request's own markers ask for, if any (Anthropic `cache_control.ttl`). */
  cacheTtlHint(): '5m' | '1h' | undefined;
}
