/**
 * Turning the images of incoming messages into what the log holds: inline (base64) images are
 * written to the attachment store and referenced by content hash; remote images keep their URL.
 * Only real PNG, JPEG, WebP and GIF images (by their first bytes) become files: inline data that is
 * anything else, or not even base64, is kept verbatim in the log as the data URL it was, so the log
 * loses nothing and a request of thousands of tiny fake "images" writes no file (SPEC section 14).
 */
import type { ImageSource } from './pending-message.ts';
import type { NormalizedMessage, PendingContentPart, PendingImagePart } from './pending-message.ts';
import type { ContentPart } from './format/current.ts';
import { decodeImageSource, describeImage, type AttachmentStore } from './attachments.ts';
import type { LogMessage } from './message-digest.ts';
import { ITEMS_PER_TURN, nextTurn } from '../lib/in-turns.ts';

type ToolResultContent = Extract<ContentPart, { kind: 'tool-result' }>['content'][number];
type StoredImage = Extract<ToolResultContent, { kind: 'image' } | { kind: 'file' }>;

function verbatim(source: ImageSource): string {
  return source.kind === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}`;
}

async function storeImage(attachments: AttachmentStore, part: PendingImagePart): Promise<StoredImage> {
  const decoded = decodeImageSource(part.source);
  if (!decoded || !describeImage(decoded.bytes)) return { kind: 'image', url: verbatim(part.source) };
  const { attachment } = await attachments.put(decoded.bytes, decoded.mediaType);
  return { kind: 'image', attachment };
}

async function storePart(attachments: AttachmentStore, part: PendingContentPart): Promise<ContentPart> {
  if (part.kind === 'image') return storeImage(attachments, part);
  if (part.kind !== 'tool-result') return part;
  const content: ToolResultContent[] = [];
  for (const c of part.content) content.push(c.kind === 'image' ? await storeImage(attachments, c) : c);
  return { ...part, content };
}

/** The v4 form of `messages`, with their inline images written to `attachments`. */
export async function storeImages(
  attachments: AttachmentStore,
  messages: readonly NormalizedMessage[],
): Promise<LogMessage[]> {
  const out: LogMessage[] = [];
  for (const m of messages) {
    // A long history is stored a slice at a time, letting other requests run (SPEC section 14).
    if (out.length > 0 && out.length % ITEMS_PER_TURN === 0) await nextTurn();
    const content: ContentPart[] = [];
    for (const part of m.content) content.push(await storePart(attachments, part));
    out.push(m.wire ? { role: m.role, content, wire: m.wire } : { role: m.role, content });
  }
  return out;
}
