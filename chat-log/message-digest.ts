/**
 * The digests of a logged message, used to compare a request's incoming history with the log: the
 * sha256 of the canonical JSON (sorted keys) of its role and content (and wire fields), with images
 * named by the sha256 of their bytes (or their URL), so the same image sent again digests the same.
 *
 * Two of them: the exact digest, which names the message in branch paths and derived chat ids and
 * never changes for what is already logged, and the echo digest, the same without the fields a
 * client may drop or add when it sends a logged item back (see `ECHO_ONLY`), so a stateless client
 * that echoes the model's output in another form than received is still recognised.
 */
import { canonicalJson } from './canonical-json.ts';
import { sha256Hex } from '../lib/sha256.ts';
import type { ContentPart, MessageEvent } from './format/current.ts';
import { withoutFileContent } from './file-parts.ts';
import { setMember } from '../lib/own-member.ts';

/** A message as the log holds it: a role, content parts, and its own wire fields when it has any. */
export type LogMessage = Pick<MessageEvent, 'role' | 'content' | 'wire'>;

type ImagePart = Extract<ContentPart, { kind: 'image' }>;
type Wire = NonNullable<LogMessage['wire']>;

function canonicalImage(p: ImagePart): unknown {
  return p.attachment
    ? { kind: 'image', sha256: p.attachment.sha256 }
    : { kind: 'image', url: p.url ?? null };
}

function canonicalPart(p: ContentPart): unknown {
  if (p.kind === 'image') return canonicalImage(p);
  if (p.kind === 'tool-result') {
    return { ...p, content: p.content.map((c) => (c.kind === 'image' ? canonicalImage(c) : c)) };
  }
  return p;
}

function digestOf(role: string, content: readonly ContentPart[], wire: Wire | undefined): string {
  const parts = content.map(canonicalPart);
  return sha256Hex(canonicalJson(wire ? { role, content: parts, wire } : { role, content: parts }));
}

/**
 * Digests already computed, by content array: the binder digests the messages it is about to log
 * and the messages read model digests the same events (same content, role and wire objects) when
 * it folds them. Logged content is never changed in place, and an entry lives as long as its array.
 */
const digested = new WeakMap<object, { role: string; wire: unknown; digest: string }>();
const echoed = new WeakMap<object, { role: string; wire: unknown; digest: string }>();

/** sha256 (hex) of the canonical JSON of a message's role and content (and wire fields, when any). */
export function messageDigest(message: LogMessage): string {
  const known = digested.get(message.content);
  if (known && known.role === message.role && known.wire === message.wire) return known.digest;
  const digest = digestOf(message.role, message.content, message.wire);
  digested.set(message.content, { role: message.role, wire: message.wire, digest });
  return digest;
}

/**
 * What of an item's wire fields only echoes the provider's bookkeeping, not the item's content
 * (Responses items, https://platform.openai.com/docs/api-reference/responses/create): the item's
 * `id` and `status`, the type `message` of an item that has a role (a plain `{role, content}` is
 * one), and per part of its `content` the text types (`input_text`, `output_text`: the part is text
 * either way), `annotations` and `logprobs`. A client that sends the model's output back without
 * them, or with its text as a plain string, sends the same message. Likewise the client's own
 * bookkeeping that it adds to an item it sends back: Codex on its built-in OpenAI provider adds
 * `internal_chat_message_metadata_passthrough` (the turn the item belongs to) to the model's items.
 */
const ECHO_ONLY = {
  item: ['id', 'status', 'internal_chat_message_metadata_passthrough'],
  itemTypes: ['message'],
  part: ['annotations', 'logprobs'],
  partTypes: ['input_text', 'output_text'],
} as const;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A content part's wire fields without the echo-only ones. */
function echoPart(rest: unknown): unknown {
  if (!isPlainObject(rest)) return rest;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(rest)) {
    if ((ECHO_ONLY.part as readonly string[]).includes(key)) continue;
    if (key === 'type' && (ECHO_ONLY.partTypes as readonly unknown[]).includes(value)) continue;
    setMember(out, key, value);
  }
  return out;
}

/** The wire fields without the echo-only ones (undefined when none are left), or `wire` itself. */
function echoWire(wire: Wire): Wire | undefined {
  let changed = false;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(wire)) {
    if ((ECHO_ONLY.item as readonly string[]).includes(key)) {
      changed = true;
    } else if (key === 'type' && (ECHO_ONLY.itemTypes as readonly unknown[]).includes(value)) {
      changed = true;
    } else if (key === 'content' && Array.isArray(value)) {
      const parts = value.map(echoPart);
      changed = true;
      // Parts with nothing left are what a plain string of text logs: no content in wire.
      if (!parts.every((p) => isPlainObject(p) && Object.keys(p).length === 0)) setMember(out, key, parts);
    } else {
      setMember(out, key, value);
    }
  }
  if (!changed) return wire;
  return Object.keys(out).length > 0 ? (out as Wire) : undefined;
}

/**
 * sha256 (hex) like `messageDigest`, without the wire fields that only echo the provider's
 * bookkeeping (`ECHO_ONLY`): the same as `messageDigest` for a message that has none.
 */
export function echoDigest(message: LogMessage): string {
  if (!message.wire) return messageDigest(message);
  const known = echoed.get(message.content);
  if (known && known.role === message.role && known.wire === message.wire) return known.digest;
  const wire = echoWire(message.wire);
  const digest =
    wire === message.wire ? messageDigest(message) : digestOf(message.role, message.content, wire);
  echoed.set(message.content, { role: message.role, wire: message.wire, digest });
  return digest;
}

/** The item id a message carries in its wire fields (a Responses output item's `id`), if any. */
export function wireItemId(message: LogMessage): string | undefined {
  const id = message.wire?.id;
  return typeof id === 'string' ? id : undefined;
}

/** What the comparison with the log knows of an incoming message. */
export interface MessageKey {
  digest: string;
  echo: string;
  /** The id of the logged item this message stands for (a Responses `item_reference`). */
  refersTo?: string;
  /**
   * The digest of the message as a log written before file parts held their content holds it
   * (`legacyDigest`), when it holds a file's content: such a logged message is this one.
   */
  legacy?: string;
  /** The digest without its reasoning parts (`reasoningFreeDigest`), when it holds some. */
  bare?: string;
}

/**
 * sha256 (hex) like `messageDigest` of the message without its reasoning parts, when it holds
 * reasoning beside other content (a model's answer with its thinking); otherwise undefined. Clients
 * often send an answer back without its reasoning (DeepSeek refuses `reasoning_content` in a
 * request; Anthropic lets earlier `thinking` blocks be left out): that is the same message.
 */
export function reasoningFreeDigest(message: LogMessage): string | undefined {
  const { content } = message;
  if (!content.some((p) => p.kind === 'reasoning') || content.every((p) => p.kind === 'reasoning')) {
    return undefined;
  }
  return digestOf(
    message.role,
    content.filter((p) => p.kind !== 'reasoning'),
    message.wire,
  );
}

/**
 * sha256 (hex) like `messageDigest` of the message without its files' content (data URL, size,
 * SHA-256), as logs written before file parts held content keep it; undefined when the message
 * holds no file content.
 */
export function legacyDigest(message: LogMessage): string | undefined {
  const content = withoutFileContent(message.content);
  return content && digestOf(message.role, content, message.wire);
}

/** The keys of `message`; `refersTo` as its provider's normalizer said. */
export function messageKey(message: LogMessage, refersTo?: string): MessageKey {
  const legacy = legacyDigest(message);
  const bare = reasoningFreeDigest(message);
  return {
    digest: messageDigest(message),
    echo: echoDigest(message),
    ...(refersTo !== undefined && { refersTo }),
    ...(legacy !== undefined && { legacy }),
    ...(bare !== undefined && { bare }),
  };
}
