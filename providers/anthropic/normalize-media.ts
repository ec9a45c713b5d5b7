/**
 * The media blocks of an Anthropic message as the chat log keeps them: text, an image (its source,
 * stored as an attachment later), a document as a file part with its content. Blocks no kind holds
 * exactly are left to the caller, which keeps them as sent.
 */
import type { PendingContentPart } from '../../chat-log/pending-message.ts';
import { base64DataUrl, inlineFilePart } from '../../chat-log/file-parts.ts';
import { anthropicImageSource } from './request-view.ts';
import { isObj, str, type Obj } from '../wire-json.ts';

type ToolResultContent = Extract<PendingContentPart, { kind: 'tool-result' }>['content'][number];

/** The fields of a `document` block a file part holds (with its source); any other is kept raw. */
const FILE_DOCUMENT_KEYS = new Set(['type', 'source', 'title', 'cache_control']);

/**
 * A `document` block as a file part with its content: a PDF (base64) or plain-text document as a
 * data URL, a document by URL as its URL. A document the file part cannot hold exactly (by Files API
 * id, of content blocks, with `context` or `citations`, of an unknown source) is kept as sent.
 */
function documentPart(block: Obj): ToolResultContent | undefined {
  const source = isObj(block.source) ? block.source : undefined;
  if (!source || Object.keys(block).some((k) => !FILE_DOCUMENT_KEYS.has(k))) return undefined;
  const name = str(block.title);
  if (block.title !== undefined && name === undefined) return undefined;
  const named = name !== undefined ? { name } : {};
  const mediaType = str(source.media_type);
  if (source.type === 'base64' && typeof source.data === 'string' && mediaType !== undefined) {
    return inlineFilePart({ ...named, mediaType, dataUrl: base64DataUrl(mediaType, source.data) });
  }
  if (source.type === 'text' && typeof source.data === 'string') {
    const type = mediaType ?? 'text/plain';
    const data = Buffer.from(source.data, 'utf8').toString('base64');
    return inlineFilePart({ ...named, mediaType: type, dataUrl: base64DataUrl(type, data) });
  }
  if (source.type === 'url' && typeof source.url === 'string') {
    return { kind: 'file', ...named, mediaType: mediaType ?? 'application/pdf', url: source.url };
  }
  return undefined;
}

/** A text, image or document block; undefined for blocks a tool result or user turn cannot hold. */
export function mediaPart(block: Obj): ToolResultContent | undefined {
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? { kind: 'text', text: block.text } : undefined;
    case 'image': {
      const source = anthropicImageSource(block);
      if (source) return { kind: 'image', source };
      // An image by Files API id: record that it was there, without bytes.
      if (!isObj(block.source) || block.source.type !== 'file') return undefined;
      const fileId = str(block.source.file_id);
      return { kind: 'file', ...(fileId !== undefined && { name: fileId }) };
    }
    case 'document':
      return documentPart(block);
    default:
      return undefined;
  }
}
