/**
 * File parts (documents, audio, any file a client sends inline) as the chat log keeps them: with
 * their content, so the log holds everything the model received. The content stays in the part as
 * the data URL it was sent as (or, for a plain-text document, the text as a base64 data URL); the
 * part also records the size and SHA-256 of the decoded bytes. Only real images become attachment
 * files (SPEC section 14), so a file is never written beside the log.
 *
 * Logs written before files kept their content hold only a file's name, media type and remote URL.
 * `withoutFileContent` gives a message as such a log holds it, so a client sending that same history
 * again is still recognised (see `legacyDigest` in message-digest.ts) instead of starting a branch.
 */
import type { ContentPart } from './format/current.ts';
import { sha256Hex } from '../lib/sha256.ts';

export type FilePart = Extract<ContentPart, { kind: 'file' }>;

const BASE64_DATA_URL = /^data:[^,]*;base64,/i;

/** A base64 data URL of `data` (already base64) with `mediaType`. */
export function base64DataUrl(mediaType: string, data: string): string {
  return `data:${mediaType};base64,${data}`;
}

/** The decoded bytes of a base64 data URL's payload; undefined when it is not valid base64. */
function decodedBytes(dataUrl: string): Buffer | undefined {
  const match = BASE64_DATA_URL.exec(dataUrl);
  if (!match) return undefined;
  const payload = dataUrl.slice(match[0].length).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(payload)) return undefined;
  return Buffer.from(payload, payload.includes('-') || payload.includes('_') ? 'base64url' : 'base64');
}

/**
 * A file part for content sent inline as `dataUrl`: name and media type as given, the content as
 * sent, and the decoded bytes' size and SHA-256 when the data is valid base64.
 */
export function inlineFilePart(opts: { name?: string; mediaType?: string; dataUrl: string }): FilePart {
  const bytes = decodedBytes(opts.dataUrl);
  return {
    kind: 'file',
    ...(opts.name !== undefined && { name: opts.name }),
    ...(opts.mediaType !== undefined && { mediaType: opts.mediaType }),
    url: opts.dataUrl,
    ...(bytes && { sha256: sha256Hex(bytes), bytes: bytes.length }),
  };
}

/** True for a file part that holds its content (a data URL) or the facts of its bytes. */
function holdsContent(part: FilePart): boolean {
  return (
    part.sha256 !== undefined ||
    part.bytes !== undefined ||
    (part.url !== undefined && /^data:/i.test(part.url))
  );
}

function contentless(part: FilePart): FilePart {
  const { sha256: _s, bytes: _b, url, ...rest } = part;
  return url !== undefined && !/^data:/i.test(url) ? { ...rest, url } : rest;
}

/**
 * The content as a log written before file parts held their content would hold it: each file part
 * without its data URL, size and SHA-256. Undefined when no file part holds content (the content is
 * then the same either way).
 */
export function withoutFileContent(content: readonly ContentPart[]): ContentPart[] | undefined {
  // Asked of every incoming message: most hold no file, and get no copy.
  const holds = (p: ContentPart): boolean =>
    (p.kind === 'file' && holdsContent(p)) ||
    (p.kind === 'tool-result' && p.content.some((c) => c.kind === 'file' && holdsContent(c)));
  if (!content.some(holds)) return undefined;
  let changed = false;
  const out = content.map((p): ContentPart => {
    if (p.kind === 'file' && holdsContent(p)) {
      changed = true;
      return contentless(p);
    }
    if (p.kind === 'tool-result' && p.content.some((c) => c.kind === 'file' && holdsContent(c))) {
      changed = true;
      return {
        ...p,
        content: p.content.map((c) => (c.kind === 'file' && holdsContent(c) ? contentless(c) : c)),
      };
    }
    return p;
  });
  return changed ? out : undefined;
}
