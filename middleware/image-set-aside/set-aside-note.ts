/** What the note of an image set aside can say about it; unknown facts are left out. */
export interface SetAsideNoteFacts {
  readonly ordinal: number;
  readonly mediaType?: string | undefined;
  readonly width?: number | undefined;
  readonly height?: number | undefined;
  readonly bytes?: number | undefined;
  /** Path of the read-only copy under the attachments directory, when one is available. */
  readonly path?: string | undefined;
  /** Where a remote image came from. */
  readonly url?: string | undefined;
}

const KB = 1024;
const MB = 1024 * 1024;

/** A byte count for people: `512 B`, `512 KB`, `1.5 MB`, `12 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < KB) return `${bytes} B`;
  if (bytes < MB) return `${Math.max(1, Math.round(bytes / KB))} KB`;
  const mb = bytes / MB;
  return `${mb < 10 ? Number(mb.toFixed(1)) : Math.round(mb)} MB`;
}

const isPositiveInt = (n: number | undefined): n is number =>
  n !== undefined && Number.isSafeInteger(n) && n > 0;

/**
 * The text that replaces an image set aside (SPEC section 7), e.g.
 * `[Image #3 set aside (image/png, 1024x768, 512 KB) to fit the model's image limits. Read-only copy: <path>]`.
 */
export function setAsideNote(facts: SetAsideNoteFacts): string {
  const details: string[] = [];
  if (facts.mediaType) details.push(facts.mediaType);
  if (isPositiveInt(facts.width) && isPositiveInt(facts.height))
    details.push(`${facts.width}x${facts.height}`);
  if (facts.bytes !== undefined && Number.isSafeInteger(facts.bytes) && facts.bytes >= 0) {
    details.push(formatBytes(facts.bytes));
  }
  const where: string[] = [];
  if (facts.path) where.push(`Read-only copy: ${facts.path}`);
  // A data URL is the image itself, not a place to find it: it would defeat the note.
  if (facts.url && !/^data:/i.test(facts.url)) where.push(`Source: ${facts.url}`);
  const about = details.length > 0 ? ` (${details.join(', ')})` : '';
  const tail = where.length > 0 ? ` ${where.join('. ')}` : '';
  return `[Image #${facts.ordinal} set aside${about} to fit the model's image limits.${tail}]`;
}
