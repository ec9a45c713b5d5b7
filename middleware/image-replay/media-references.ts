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

// The same pattern without the global flag: a test that keeps no position between calls.
const ANY_MEDIA_REFERENCE = new RegExp(MEDIA_REFERENCE.source, 'i');

/** True when `text` holds a media reference: a test that copies nothing, for texts that have none. */
export function hasMediaReference(text: string): boolean {
  return ANY_MEDIA_REFERENCE.test(text);
}

/** `text` with every media reference replaced, and how many were replaced. */
export function removeMediaReferences(text: string): { text: string; removed: number } {
  let removed = 0;
  const out = text.replace(MEDIA_REFERENCE, () => {
    removed += 1;
    return MEDIA_REFERENCE_REMOVED_TEXT;
  });
  return { text: removed === 0 ? text : out, removed };
}
