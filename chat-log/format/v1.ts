/**
 * Chat log format version 1. FROZEN: a compatibility record, never rewritten.
 * Self-contained on purpose (no imports from other versions), so a change elsewhere cannot move it.
 *
 * v1 adds content parts (text, image, tool-call) next to v0's plain string content, and the role
 * `model` next to v0's `assistant`. Tools arrive: a request carries the tool definitions inline,
 * and the tool results the client sent with a request are attached to it as `notes`.
 */
import { z } from 'zod';

export const VERSION = 1 as const;

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
export const imagePart = z.strictObject({
  kind: z.literal('image'),
  attachment: imageAttachment.optional(),
  url: z.string().optional(),
});
export const toolCallPart = z.strictObject({
  kind: z.literal('tool-call'),
  id: z.string(),
  name: z.string(),
  args: z.string(),
});
export const contentPart = z.discriminatedUnion('kind', [textPart, imagePart, toolCallPart]);

export const messageEvent = z.strictObject({
  ...eventBase,
  type: z.literal('message'),
  role: z.enum(['user', 'assistant', 'model', 'system']),
  content: z.union([z.string(), z.array(contentPart)]),
});

/** A tool definition as the client sent it (inlined; v3 replaced this by name and digest). */
export const toolDefinition = z.strictObject({
  name: z.string(),
  description: z.string().optional(),
  parameters: z.json().optional(),
});

/** A tool result the client sent with the request (text only in v1). */
export const note = z.strictObject({ callId: z.string(), failed: z.boolean(), content: z.string() });

export const requestEvent = z.strictObject({
  ...eventBase,
  type: z.literal('request'),
  requestId: z.string(),
  format: z.enum(['openai', 'anthropic']),
  provider: z.string(),
  model: z.string(),
  settings: z.record(z.string(), z.json()),
  tools: z.array(toolDefinition),
  notes: z.array(note).optional(),
});

export const usage = z.strictObject({
  inputTokens: int.optional(),
  outputTokens: int.optional(),
});

export const responseEvent = z.strictObject({
  ...eventBase,
  type: z.literal('response'),
  requestId: z.string(),
  status: z.number().int(),
  ok: z.boolean(),
  model: z.string().optional(),
  stopReason: z.string().optional(),
  usage: usage.optional(),
  error: z.string().optional(),
});

export const event = z.discriminatedUnion('type', [messageEvent, requestEvent, responseEvent]);

export const header = z.strictObject({
  version: z.literal(VERSION),
  id: z.string(),
  createdAt: int,
});

export type Header = z.infer<typeof header>;
export type Event = z.infer<typeof event>;
