/**
 * The piece of data one model call carries down the corridor: the request as sent (and the view
 * that edits it in place), the chat's recorded decisions, and what the mechanisms decide on the way.
 */
import type { NewEvent } from '../chat-log/format/current.ts';
import type { Config } from '../config/config.ts';
import type { FormatAdapter } from '../providers/provider.ts';
import type { RequestView } from '../providers/request-view.ts';
import type { Clock } from '../lib/clock.ts';
import { spliceEdits, type BodyLayout } from '../providers/splice-edits.ts';
import type { ImageOrdinals, ImageFacts } from './image-set-aside/index.ts';
import type { ImageRef } from '../providers/request-view.ts';
import type { RemovedChars } from './accounting/removal-meter.ts';
import type { CacheKeyRefusals } from './prompt-caching/cache-key-refusals.ts';
import type { StreamUsageRefusals } from './stream-usage/stream-usage-refusals.ts';

/** The chat's recorded decisions, as the read models hold them. */
export interface ChatDecisions {
  trims: Array<{
    callId: string;
    part: number;
    digest: string;
    headChars: number;
    tailChars: number;
    originalChars: number;
    /** Each part's code points and digest, for a text spread over several text parts. */
    parts?: Array<{ chars: number; digest: string }>;
  }>;
  setAside: Array<{ key: string; note: string; ordinal: number }>;
  projection: Array<{ callId: string; action: 'soft' | 'cleared'; digest: string }>;
  /** The image replay window the chat's last logged request used (its first kept turn). */
  imageReplayFrom?: number;
}

export interface CallContext {
  readonly requestId: string;
  readonly startedAt: number;
  readonly config: Readonly<Config>;
  readonly clock: Clock;
  readonly adapter: FormatAdapter;
  readonly providerName: string;
  readonly model: string;
  /** Context window of the model in tokens, when known. */
  readonly contextWindow: number | undefined;
  readonly chatId: string;
  /** The body as the client sent it (bytes); forwarded unchanged when no mechanism changed anything. */
  readonly raw: Buffer;
  /** The parsed body the view edits in place. */
  readonly body: Record<string, unknown>;
  /** Where the body's messages and top-level members are in `raw`, when the shape scan found them. */
  readonly layout?: BodyLayout;
  readonly view: RequestView;
  /** Request headers (lower-case names), for per-request overrides such as `x-oda-pruning`. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly decisions: ChatDecisions;
  /** The chat's cache clock before this request. */
  readonly lastCacheTouchAt: number | undefined;
  /** Ordinals of the images of the request as the client sent it (before any replacement). */
  readonly imageOrdinals: ImageOrdinals;
  /** The providers that refused the gateway's `prompt_cache_key`, shared by the gateway's calls. */
  readonly cacheKeyRefusals: CacheKeyRefusals;
  /** The providers that refused the `stream_options` the gateway asks usage with, shared likewise. */
  readonly streamUsageRefusals: StreamUsageRefusals;
  /** What the chat log knows of an image (stored attachment facts and read-only copy path). */
  describeImage(image: ImageRef, key: string): ImageFacts;
  /** Appends decision events to the chat log; resolves once they are durable. */
  record(events: NewEvent[]): Promise<void>;
  /**
   * For a large request, resolves on this request's next turn of the event loop (taken in order
   * with other requests): the pipeline waits for it between steps, so a large request's passes
   * never stack into one long turn. Absent for a small request, whose steps run on.
   */
  readonly nextTurn?: () => Promise<void>;
  /** What the mechanisms did on this request (response headers and metrics). */
  readonly effects: {
    trimmed: number;
    trimmedChars: number;
    imagesSetAside: number;
    imageRounds: number;
    pruned: { soft: number; cleared: number; charsRemoved: number } | undefined;
    imageReplay: { imagesRemoved: number; referencesRemoved: number };
    /** What prompt caching added (the `x-oda-prompt-caching` value), when it acted. */
    promptCaching?: string;
    /**
     * True when the gateway asked for a streamed answer's usage the client did not ask for: the
     * usage-only chunk is then the gateway's, kept out of the client's stream.
     */
    streamUsageAdded?: boolean;
    /** The image replay window this request used (its first kept turn), logged with the response. */
    imageReplayFrom?: number;
    /** Estimate characters each mechanism removed from this request, repairs included. */
    removed?: RemovedChars;
  };
}

/**
 * The bytes to send, as parts to write one after another: the client's own when nothing changed;
 * else the client's own with the edited values written again, when the body's layout and the view
 * say where they are; else the whole body.
 */
export function outgoingParts(ctx: CallContext): readonly Buffer[] {
  if (!ctx.view.changed) return [ctx.raw];
  const places = ctx.view.editedPlaces?.();
  const spliced = ctx.layout && places ? spliceEdits(ctx.raw, ctx.body, ctx.layout, places) : undefined;
  return spliced ?? [Buffer.from(JSON.stringify(ctx.body))];
}

/**
 * Edited bodies under this size are joined before they go out: each part would be a write of its
 * own, and copying a few kilobytes costs less than a system call.
 */
export const JOIN_PARTS_BELOW = 64 * 1024;

/**
 * What goes to the provider: one buffer for a small body (one write with its headers), the parts
 * for a large edited one (not copied into a new buffer first), and the length of either.
 */
export function outgoingBody(ctx: CallContext): { body: Buffer | readonly Buffer[]; length: number } {
  const parts = outgoingParts(ctx);
  let length = 0;
  for (const part of parts) length += part.length;
  if (parts.length === 1) return { body: parts[0]!, length };
  return { body: length < JOIN_PARTS_BELOW ? Buffer.concat(parts, length) : parts, length };
}

/** The bytes to send (`outgoingParts`) in one buffer, to read them. */
export function outgoingBytes(ctx: CallContext): Buffer {
  const parts = outgoingParts(ctx);
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** One stage of the pipeline, with one purpose. */
export interface PipelineStep {
  readonly name: string;
  run(ctx: CallContext): Promise<void> | void;
}
