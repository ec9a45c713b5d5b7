/**
 * Chat log format version 0. FROZEN: a compatibility record of the first format, never rewritten.
 * Self-contained on purpose (no imports from other versions), so a change elsewhere cannot move it.
 *
 * v0: plain text chats. The header names the chat and its creation time; events are messages with
 * string content (roles `user`, `assistant`, `system`), requests and responses. No tools, no parts.
 */
import { z } from 'zod';

export const VERSION = 0 as const;

const int = z.number().int().nonnegative();
const eventBase = { seq: int, at: int };

export const messageEvent = z.strictObject({
  ...eventBase,
  type: z.literal('message'),
  role: z.enum(['user', 'assistant', 'system']),
  content: z.string(),
});

export const requestEvent = z.strictObject({
  ...eventBase,
  type: z.literal('request'),
  requestId: z.string(),
  format: z.enum(['openai', 'anthropic']),
  provider: z.string(),
  model: z.string(),
  settings: z.record(z.string(), z.json()),
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
