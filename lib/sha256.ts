import { createHash } from 'node:crypto';

/** Lower-case hex SHA-256 of bytes, or of a string's UTF-8. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}
