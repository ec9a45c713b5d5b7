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

/** sha256 (hex) of the canonical JSON of a message's role and content (and wire fields, when any). */
export function messageDigest(message: LogMessage): string {
  const content = message.content.map(canonicalPart);
  return sha256Hex(
    canonicalJson(
      message.wire ? { role: message.role, content, wire: message.wire } : { role: message.role, content },
    ),
  );
}
