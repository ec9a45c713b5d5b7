/**
 * Chat log format version 3. FROZEN: a compatibility record, never rewritten.
 * Self-contained on purpose (no imports from other versions), so a change elsewhere cannot move it.
 *
 * v3 stops inlining tool definitions: a request records its tools by name and digest, and a change
 * in the request's tools is its own `tools-changed` event. The header gains the seeded marker and
 * the inherited event count of a branched chat. Tool results are still request `notes` (v4 turns
 * them into messages of their own).
 */
import { z } from 'zod';

export const VERSION = 3 as const;

const int = z.number().int().nonnegative();
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const eventBase = { seq: int, at: int };

export const imageAttachment = z.strictObject({
  sha256,
  mediaType: z.enum(['image/png', 'image/jpeg', 'image/webp', 'image/gif']),
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
  args: z.string(),
});
export const contentPart = z.discriminatedUnion('kind', [
  textPart,
  reasoningPart,
  imagePart,
  filePart,
  toolCallPart,
]);

export const messageEvent = z.strictObject({
  ...eventBase,
  type: z.literal('message'),
  role: z.enum(['user', 'model', 'developer', 'system']),
  content: z.array(contentPart),
});

/** A tool as recorded: by name and digest, never inlined. */
export const toolRef = z.strictObject({ name: z.string(), digest: sha256 });

export const toolsChangedEvent = z.strictObject({
  ...eventBase,
  type: z.literal('tools-changed'),
  added: z.array(z.strictObject({ tool: toolRef, extends: int.optional() })),
  removed: z.array(toolRef),
});

export const noteContentPart = z.discriminatedUnion('kind', [textPart, imagePart, filePart]);
export const note = z.strictObject({
  callId: z.string(),
  failed: z.boolean(),
  content: z.array(noteContentPart),
});

export const requestEvent = z.strictObject({
  ...eventBase,
  type: z.literal('request'),
  requestId: z.string(),
  format: z.enum(['openai', 'anthropic']),
  provider: z.string(),
  model: z.string(),
  settings: z.record(z.string(), z.json()),
  tools: z.array(toolRef),
  systemDigest: sha256.optional(),
  notes: z.array(note).optional(),
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

export const trimEvent = z.strictObject({
  ...eventBase,
  type: z.literal('tool-result-trimmed'),
  requestId: z.string(),
  callId: z.string(),
  part: int,
  originalChars: int,
  headChars: int,
  tailChars: int,
  digest: sha256,
  trigger: z.enum(['threshold', 'overflow']),
});

export const imageSetAsideEvent = z.strictObject({
  ...eventBase,
  type: z.literal('image-set-aside'),
  requestId: z.string(),
  key: sha256,
  ordinal: int,
  note: z.string(),
  round: int,
});

export const pruningEvent = z.strictObject({
  ...eventBase,
  type: z.literal('pruning'),
  requestId: z.string(),
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
  inheritedEvents: int.optional(),
  origin: z.string().optional(),
  depth: int.optional(),
  preset: z.string().optional(),
});

export type Header = z.infer<typeof header>;
export type Event = z.infer<typeof event>;
