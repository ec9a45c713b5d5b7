/**
 * Turning the images of incoming messages into what the log holds: inline (base64) images are
 * written to the attachment store and referenced by content hash; remote images keep their URL.
 * Inline data that is not a PNG, JPEG, WebP or GIF image is kept too, as a file part by hash, and
 * data that is not even base64 is kept verbatim as a data URL, so the log loses nothing.
 */
import type { ImageSource } from './pending-message.ts';
import type { NormalizedMessage, PendingContentPart, PendingImagePart } from './pending-message.ts';
import type { ContentPart } from './format/current.ts';
import { isOdaError } from '../lib/errors.ts';
import { decodeImageSource, type AttachmentStore } from './attachments.ts';
import type { LogMessage } from './message-digest.ts';

type ToolResultContent = Extract<ContentPart, { kind: 'tool-result' }>['content'][number];
type StoredImage = Extract<ToolResultContent, { kind: 'image' } | { kind: 'file' }>;

function verbatim(source: ImageSource): string {
  return source.kind === 'url' ? source.url : `data:${source.mediaType};base64,${source.data}`;
}

async function storeImage(attachments: AttachmentStore, part: PendingImagePart): Promise<StoredImage> {
  const decoded = decodeImageSource(part.source);
  if (!decoded) return { kind: 'image', url: verbatim(part.source) };
  try {
    const { attachment } = await attachments.put(decoded.bytes, decoded.mediaType);
    return { kind: 'image', attachment };
  } catch (err) {
    if (!isOdaError(err) || err.status !== 400) throw err;
    const { sha256 } = await attachments.putBytes(decoded.bytes);
    const file: StoredImage = { kind: 'file', sha256, bytes: decoded.bytes.length };
    if (decoded.mediaType !== '') file.mediaType = decoded.mediaType;
    return file;
  }
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
    const content: ContentPart[] = [];
    for (const part of m.content) content.push(await storePart(attachments, part));
    out.push(m.wire ? { role: m.role, content, wire: m.wire } : { role: m.role, content });
  }
  return out;
}
