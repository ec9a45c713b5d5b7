/**
 * The stable key of an image (the `image-set-aside` event's `key`), shared by the mechanism that
 * sets images aside (from the request) and the branch seed (from the logged parts).
 */
import { sha256Hex } from './sha256.ts';

/** The text an image given by a provider file id stands for (its bytes are never fetched). */
export function fileIdImageUrl(fileId: string): string {
  return `file_id:${fileId}`;
}

/**
 * sha256 hex of the decoded bytes for an inline (base64) image, so the same picture sent as an
 * OpenAI data URL or an Anthropic base64 block has one key, equal to its attachment's content hash;
 * sha256 hex of the URL text for a remote image or a file id (`fileIdImageUrl`).
 */
export function imageKey(
  source: { kind: 'base64'; data: string; mediaType?: string } | { kind: 'url'; url: string },
): string {
  return sha256Hex(source.kind === 'base64' ? Buffer.from(source.data, 'base64') : source.url);
}
