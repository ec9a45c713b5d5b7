/**
 * The textual media references an agent client leaves in a prompt when it attaches a file
 * (seed 001): `[media attached: ...]` (also numbered, `[media attached 1/2: ...]`),
 * `[Image: source: ...]`, and bare `media://inbound/...` up to whitespace.
 */

/** What the image replay clean-up writes where a media reference was. */
export const MEDIA_REFERENCE_REMOVED_TEXT = '[media reference removed - already processed by model]';

// One pattern, so a bracketed reference that contains a media:// URI is replaced once, whole.
// Bracketed forms stop at the line end: an unclosed bracket never swallows the text after it.
const MEDIA_REFERENCE =
  /\[media attached(?:\s+\d+\/\d+)?:[^\]\n]*\]|\[Image:\s*source:[^\]\n]*\]|media:\/\/inbound\/[^\s\]]*/gi;

/** The pattern's source (a string: no match position to share), for the tests of the quick test. */
export const MEDIA_REFERENCE_SOURCE = MEDIA_REFERENCE.source;

// The two kinds of reference as sticky patterns, tried only where one can start. Every match of
// MEDIA_REFERENCE holds a '[' (the bracketed forms) or a '://' (the bare URI); neither is a letter,
// so plain indexOf finds them whatever the case, far faster than the case-insensitive alternation
// scans a long text that holds none (1,000 prose turns of about 1 KB: 0.04 ms against 1.07). Each
// pattern's position is set right before its test, so none is carried from one call to the next.
const BRACKETED_AT = /\[(?:media attached(?:\s+\d+\/\d+)?:[^\]\n]*\]|Image:\s*source:[^\]\n]*\])/iy;
const INBOUND_AT = /media:\/\/inbound\//iy;
const SCHEME = 'media'.length;

/** True when `text` holds a media reference: a test that copies nothing, for texts that have none. */
export function hasMediaReference(text: string): boolean {
  for (let at = text.indexOf('['); at >= 0; at = text.indexOf('[', at + 1)) {
    BRACKETED_AT.lastIndex = at;
    if (BRACKETED_AT.test(text)) return true;
  }
  for (let at = text.indexOf('://', SCHEME); at >= 0; at = text.indexOf('://', at + 1)) {
    INBOUND_AT.lastIndex = at - SCHEME;
    if (INBOUND_AT.test(text)) return true;
  }
  return false;
}

/** `text` with every media reference replaced, and how many were replaced. */
export function removeMediaReferences(text: string): { text: string; removed: number } {
  // Most texts (every old tool result a pruning digest covers, on every request) hold none.
  if (!hasMediaReference(text)) return { text, removed: 0 };
  let removed = 0;
  const out = text.replace(MEDIA_REFERENCE, () => {
    removed += 1;
    return MEDIA_REFERENCE_REMOVED_TEXT;
  });
  return { text: removed === 0 ? text : out, removed };
}
