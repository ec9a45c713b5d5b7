import { createHash } from 'node:crypto';

/** sha256 hex of a text's UTF-8 bytes: how trim decisions recognise the text they apply to. */
export function textDigest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
