/**
 * Chat log format version 5 (current). FROZEN once shipped: only seed 002's three in-version
 * changes are allowed here (an optional property inside an event body; a new event payload version
 * keeping every earlier variant, numbered higher; a source kind added only as an attribution), and
 * `npm test` checks that against `chat-log/fingerprints.json`. Anything else starts v6.
 *
 * v5 is v4 plus what a log needs to hold every message the model receives, as it was sent: a `raw`
 * content part for blocks, parts and items no other kind holds exactly; a message's own wire fields
 * (`wire`) and the role `other`; the `responses` request format; the provider's response id; the
 * `compaction` event; and the header's `conversation` (main, side, sub-agent or branch of a
 * session). Every v4 record is a valid v5 record.
 */
import { z } from 'zod';

export const VERSION = 5 as const;

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
/**
 * A content block, part or item no other kind holds exactly (an unknown Anthropic block, an unknown
 * OpenAI content part, a Responses `reasoning` item with `encrypted_content`, ...): its JSON as sent.
 */
export const rawPart = z.strictObject({ kind: z.literal('raw'), value: z.json() });
/** Content a tool result may carry. */
export const toolResultContentPart = z.discriminatedUnion('kind', [textPart, imagePart, filePart, rawPart]);
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
  rawPart,
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
  /** `other`: a role the gateway does not know; the role as sent is in `wire.role`. */
  role: z.enum(['user', 'model', 'tool', 'developer', 'system', 'other']),
  content: z.array(contentPart),
  source: messageSource.optional(),
  /**
   * The message's (or item's) own fields outside its content, as sent, when they hold more than the
   * role recorded above: an OpenAI `name`, a Responses item envelope, an unknown role.
   */
  wire: z.record(z.string(), z.json()).optional(),
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
  format: z.enum(['openai', 'anthropic', 'responses']),
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
  /** Of `cacheWriteTokens`, those written to a one-hour cache (Anthropic's `ttl: "1h"`, billed higher). */
  cacheWrite1hTokens: int.optional(),
});

/**
 * What the gateway's mechanisms did to one request (savings accounting): the estimate characters
 * each removed from what the model received (code points, CJK weighted, 8000 per image; replayed
 * decisions count on every request that carries them), and the image replay window the request
 * used (its first kept turn), which later requests replay while the prompt cache is warm.
 */
export const mechanisms = z.strictObject({
  removed: z
    .strictObject({
      trimming: int.optional(),
      pruning: int.optional(),
      imageSetAside: int.optional(),
      imageReplay: int.optional(),
    })
    .optional(),
  imageReplayFrom: int.optional(),
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
  /** The provider's id of the answer (Responses `resp_...`, Anthropic `msg_...`, OpenAI `chatcmpl-...`). */
  responseId: z.string().optional(),
  /** What the gateway's mechanisms did to the request (see `mechanisms`). */
  mechanisms: mechanisms.optional(),
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
  /**
   * Added in v5: a text spread over several text parts, trimmed as one text (`part` is its first
   * part, `originalChars` and `digest` are of the parts joined): each part's code points and sha256,
   * in order, so replay finds the same parts wherever they sit in the result.
   */
  parts: z.array(z.strictObject({ chars: int, digest: sha256 })).optional(),
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

/**
 * The client replaced the history (message events `fromSeq`..`toSeq`, inclusive) with a summary;
 * the summary-based history follows as ordinary message events (`messages` of them).
 */
export const compactionEvent = z.strictObject({
  ...eventBase,
  type: z.literal('compaction'),
  requestId: z.string(),
  replaced: z.strictObject({ fromSeq: int, toSeq: int }),
  messages: int,
});

export const event = z.discriminatedUnion('type', [
  messageEvent,
  toolsChangedEvent,
  requestEvent,
  responseEvent,
  trimEvent,
  imageSetAsideEvent,
  pruningEvent,
  compactionEvent,
]);

/** A chat's place in its agent session (SPEC section 10). */
export const conversation = z.strictObject({
  kind: z.enum(['main', 'side', 'subagent', 'branch']),
  /** The session's main chat id. */
  session: z.string(),
  agentId: z.string().optional(),
  /** For side chats: what the request was for (`title`, `summary`, `classifier`, `quota`, ...). */
  purpose: z.string().optional(),
});

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
  /** Which conversation of an agent session this chat is. */
  conversation: conversation.optional(),
});

export type Header = z.infer<typeof header>;
export type Event = z.infer<typeof event>;
export type MessageEvent = z.infer<typeof messageEvent>;
export type ContentPart = z.infer<typeof contentPart>;
export type RawPart = z.infer<typeof rawPart>;
export type CompactionEvent = z.infer<typeof compactionEvent>;
export type Conversation = z.infer<typeof conversation>;
export type ImageAttachment = z.infer<typeof imageAttachment>;
export type ToolRef = z.infer<typeof toolRef>;
export type Usage = z.infer<typeof usage>;
export type Mechanisms = z.infer<typeof mechanisms>;
/** An event before the store assigns `seq` and `at`. */
export type NewEvent = Event extends infer E
  ? E extends { seq: number; at: number }
    ? Omit<E, 'seq' | 'at'>
    : never
  : never;
