import { createHash } from 'node:crypto';
import type { ImageSource } from '../../providers/request-view.ts';

/**
 * The stable key of an image (the v4 `image-set-aside` event's `key`): sha256 hex of the decoded
 * bytes for an inline (base64) image, so the same picture sent as an OpenAI data URL or an
 * Anthropic base64 block has one key, equal to its attachment's content hash; sha256 hex of the
 * URL text for a remote image, whose bytes the gateway never fetches.
 */
export function imageKey(source: ImageSource): string {
  const hash = createHash('sha256');
  if (source.kind === 'base64') hash.update(Buffer.from(source.data, 'base64'));
  else hash.update(source.url, 'utf8');
  return hash.digest('hex');
}
