/**
 * Chat log format version 4. FROZEN once shipped: only seed 002's three in-version
 * changes are allowed here (an optional property inside an event body; a new event payload version
 * keeping every earlier variant, numbered higher; a source kind added only as an attribution), and
 * `npm test` checks that against `chat-log/fingerprints.json`. Anything else starts v5.
 *
 * v4 makes a tool result a message of its own (role `tool`, with the call id and a failed flag);
 * v3 and earlier attached tool results to the request as notes, which v4 keeps as the reserved,
 * always-empty `notes` slot of the request event.
 */
import { z } from 'zod';

export const VERSION = 4 as const;

const int = z.number().int().nonnegative();
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

/** Media types an image attachment may have. */
export const imageMediaType = z.enum(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

/** A stored image: written once under the attachments dir, named by content hash. */
export const imageAttachment = z.strictObject({
  sha256,
  mediaType: imageMediaType,
  bytes: int,
  width: int,
  height: int,
});

export const textPart = z.strictObject({ kind: z.literal('text'), text: z.string() });
export const reasoningPart = z.strictObject({
  kind: z.literal('reasoning'),
  text: z.string(),
  signature: z.string().optional(),
  redacted: z.boolean().optional(),
});
export const imagePart = z.strictObject({
  kind: z.literal('image'),
  attachment: imageAttachment.optional(),
  url: z.string().optional(),
});
export const filePart = z.strictObject({
  kind: z.literal('file'),
  name: z.string().optional(),
  mediaType: z.string().optional(),
  sha256: sha256.optional(),
  bytes: int.optional(),
  url: z.string().optional(),
});
export const toolCallPart = z.strictObject({
  kind: z.literal('tool-call'),
  id: z.string(),
  name: z.string(),
  /** The arguments as the model sent them (JSON text). */
  args: z.string(),
});
/** Content a tool result may carry. */
export const toolResultContentPart = z.discriminatedUnion('kind', [textPart, imagePart, filePart]);
export const toolResultPart = z.strictObject({
  kind: z.literal('tool-result'),
  callId: z.string(),
  toolName: z.string().optional(),
  failed: z.boolean(),
  content: z.array(toolResultContentPart),
});

export const contentPart = z.discriminatedUnion('kind', [
  textPart,
  reasoningPart,
  imagePart,
  filePart,
  toolCallPart,
  toolResultPart,
]);

/** Where a message came from. Kinds are attributions only; they change no other policy. */
export const messageSource = z.strictObject({
  kind: z.enum(['client', 'provider', 'gateway']),
});

/** A tool as recorded: by name and digest, never inlined. */
export const toolRef = z.strictObject({ name: z.string(), digest: sha256 });

const eventBase = { seq: int, at: int };

export const messageEvent = z.strictObject({
  ...eventBase,
  type: z.literal('message'),
  role: z.enum(['user', 'model', 'tool', 'developer', 'system']),
  content: z.array(contentPart),
  source: messageSource.optional(),
});

/** A change in the request's tools, recorded as a developer message. */
export const toolsChangedEvent = z.strictObject({
  ...eventBase,
  type: z.literal('tools-changed'),
  /** Added tools, bound to the earlier request event (seq) they extend. */
  added: z.array(z.strictObject({ tool: toolRef, extends: int.optional() })),
  /** Removed tools stand alone. */
  removed: z.array(toolRef),
});

export const requestEvent = z.strictObject({
  ...eventBase,
  type: z.literal('request'),
  requestId: z.string(),
  format: z.enum(['openai', 'anthropic']),
  provider: z.string(),
  model: z.string(),
  /** Every top-level field of the request except messages, system and tools, as sent. */
  settings: z.record(z.string(), z.json()),
  tools: z.array(toolRef),
  /** Digest of the system prompt, when there is one. */
  systemDigest: sha256.optional(),
  /** Reserved (retired in v4): tool results attached as notes. Must stay empty. */
  notes: z.undefined().optional(),
});

export const usage = z.strictObject({
  inputTokens: int.optional(),
  outputTokens: int.optional(),
  cacheReadTokens: int.optional(),
  cacheWriteTokens: int.optional(),
});

export const responseEvent = z.strictObject({
  ...eventBase,
  type: z.literal('response'),
  requestId: z.string(),
  /** When the request started; a successful call moves the cache clock to this. */
  startedAt: int,
  status: z.number().int(),
  ok: z.boolean(),
  model: z.string().optional(),
  stopReason: z.string().optional(),
  usage: usage.optional(),
  attempts: int,
  latencyMs: int,
  error: z.string().optional(),
});

/** Decision: one tool result shortened at the compaction point (seed 000). */
export const trimEvent = z.strictObject({
  ...eventBase,
  type: z.literal('tool-result-trimmed'),
  requestId: z.string(),
  callId: z.string(),
  /** Which text part of the result (0-based). */
  part: int,
  originalChars: int,
  headChars: int,
  tailChars: int,
  /** sha256 of the original text, so replay applies only to the same text. */
  digest: sha256,
  trigger: z.enum(['threshold', 'overflow']),
});

/** Decision: one image set aside after an image-limit refusal (seed 000). */
export const imageSetAsideEvent = z.strictObject({
  ...eventBase,
  type: z.literal('image-set-aside'),
  requestId: z.string(),
  /** sha256 of the image bytes, or of the URL for a remote image. */
  key: sha256,
  ordinal: int,
  note: z.string(),
  round: int,
});

/** Decision: a cache-TTL pruning pass; the projection it leaves is replayed until the next pass. */
export const pruningEvent = z.strictObject({
  ...eventBase,
  type: z.literal('pruning'),
  requestId: z.string(),
  /** Every tool result the projection changes, soft-trimmed or cleared. */
  projection: z.array(
    z.strictObject({
      callId: z.string(),
      action: z.enum(['soft', 'cleared']),
      digest: sha256,
    }),
  ),
  soft: int,
  cleared: int,
  charsRemoved: int,
  estimateBefore: int,
  estimateAfter: int,
  /** True when the pass changed what the model receives (the cache clock moves then). */
  changed: z.boolean(),
});

export const event = z.discriminatedUnion('type', [
  messageEvent,
  toolsChangedEvent,
  requestEvent,
  responseEvent,
  trimEvent,
  imageSetAsideEvent,
  pruningEvent,
]);

export const header = z.strictObject({
  version: z.literal(VERSION),
  id: z.string(),
  createdAt: int,
  cwd: z.string().optional(),
  parent: z.string().optional(),
  seeded: z.boolean().optional(),
  /** Events inherited from the parent (a seeded chat); kept with the log, not replayed as records. */
  inheritedEvents: int.optional(),
  origin: z.string().optional(),
  depth: int.optional(),
  preset: z.string().optional(),
  /** Team that owns the chat (issue: teams). */
  team: z.string().optional(),
});

export type Header = z.infer<typeof header>;
export type Event = z.infer<typeof event>;
export type MessageEvent = z.infer<typeof messageEvent>;
export type ContentPart = z.infer<typeof contentPart>;
export type ImageAttachment = z.infer<typeof imageAttachment>;
export type ToolRef = z.infer<typeof toolRef>;
export type Usage = z.infer<typeof usage>;
/** An event before the store assigns `seq` and `at`. */
export type NewEvent = Event extends infer E
  ? E extends { seq: number; at: number }
    ? Omit<E, 'seq' | 'at'>
    : never
  : never;
