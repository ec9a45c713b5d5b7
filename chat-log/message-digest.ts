/**
 * The digest of a logged message, used to compare a request's incoming history with the log: the
 * sha256 of the canonical JSON (sorted keys) of its role and content, with images named by the
 * sha256 of their bytes (or their URL), so the same image sent again digests the same.
 */
import { canonicalJson } from './canonical-json.ts';
import { sha256Hex } from '../lib/sha256.ts';
import type { ContentPart, MessageEvent } from './format/current.ts';

/** A message as the log holds it: a role, content parts, and its own wire fields when it has any. */
export type LogMessage = Pick<MessageEvent, 'role' | 'content' | 'wire'>;

type ImagePart = Extract<ContentPart, { kind: 'image' }>;

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

/**
 * Digests already computed, by content array: the binder digests the messages it is about to log
 * and the messages read model digests the same events (same content, role and wire objects) when
 * it folds them. Logged content is never changed in place, and an entry lives as long as its array.
 */
const digested = new WeakMap<object, { role: string; wire: unknown; digest: string }>();

/** sha256 (hex) of the canonical JSON of a message's role and content (and wire fields, when any). */
export function messageDigest(message: LogMessage): string {
  const known = digested.get(message.content);
  if (known && known.role === message.role && known.wire === message.wire) return known.digest;
  const content = message.content.map(canonicalPart);
  const digest = sha256Hex(
    canonicalJson(
      message.wire ? { role: message.role, content, wire: message.wire } : { role: message.role, content },
    ),
  );
  digested.set(message.content, { role: message.role, wire: message.wire, digest });
  return digest;
}
