/**
 * Image attachments: each image the chat log holds is written once under the attachments dir,
 * named by the sha256 of its bytes, as a read-only copy (mode 0444) that a note can point people
 * to. Image type and dimensions are sniffed from the bytes themselves (no dependency); only real
 * PNG, JPEG, WebP and GIF images become files. Each team's images live in a folder of their own
 * (`teams/<team>/`), so no team can learn from another's copies, not even by timing a write that
 * finds its file already there (SPEC section 14).
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import type { ImageSource } from './pending-message.ts';
import type { ImageAttachment } from './format/current.ts';
import { OdaError } from '../lib/errors.ts';
import { sha256Hex } from '../lib/sha256.ts';

export type ImageMediaType = ImageAttachment['mediaType'];

const EXTENSIONS: Record<ImageMediaType, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
};

/** Media type and pixel size of a PNG, JPEG, WebP or GIF image, read from its header; else undefined. */
export function describeImage(
  bytes: Uint8Array,
): { mediaType: ImageMediaType; width: number; height: number } | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return describePng(b) ?? describeGif(b) ?? describeWebp(b) ?? describeJpeg(b);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function describePng(b: Buffer) {
  if (b.length < 24 || !b.subarray(0, 8).equals(PNG_SIGNATURE)) return undefined;
  // The first chunk must be IHDR: length(4) type(4) width(4) height(4).
  if (b.toString('latin1', 12, 16) !== 'IHDR') return undefined;
  return { mediaType: 'image/png' as const, width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

function describeGif(b: Buffer) {
  if (b.length < 10) return undefined;
  const magic = b.toString('latin1', 0, 6);
  if (magic !== 'GIF87a' && magic !== 'GIF89a') return undefined;
  return { mediaType: 'image/gif' as const, width: b.readUInt16LE(6), height: b.readUInt16LE(8) };
}

function describeWebp(b: Buffer) {
  if (b.length < 16 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WEBP') {
    return undefined;
  }
  const chunk = b.toString('latin1', 12, 16);
  const mediaType = 'image/webp' as const;
  if (chunk === 'VP8 ') {
    // Lossy: 3-byte frame tag, start code 9d 01 2a, then 14-bit width and height (2 scale bits).
    if (b.length < 30 || b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
    return { mediaType, width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  }
  if (chunk === 'VP8L') {
    // Lossless: signature 0x2f, then width-1 and height-1 as two 14-bit fields, little endian.
    if (b.length < 25 || b[20] !== 0x2f) return undefined;
    const bits = b.readUInt32LE(21);
    return { mediaType, width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (chunk === 'VP8X') {
    // Extended: flags(1) reserved(3), then canvas width-1 and height-1 as 24-bit little endian.
    if (b.length < 30) return undefined;
    return { mediaType, width: b.readUIntLE(24, 3) + 1, height: b.readUIntLE(27, 3) + 1 };
  }
  return undefined;
}

function isSofMarker(marker: number): boolean {
  // SOF0..SOF15, except DHT (c4), JPG (c8) and DAC (cc), which share the range.
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function describeJpeg(b: Buffer) {
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let i = 2;
  while (i < b.length) {
    if (b[i] !== 0xff) return undefined;
    while (b[i] === 0xff) i++; // fill bytes
    const marker = b[i];
    i++;
    if (marker === undefined) return undefined;
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) continue; // no length
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image / scan before any frame header
    if (i + 2 > b.length) return undefined;
    const length = b.readUInt16BE(i);
    if (length < 2) return undefined;
    if (isSofMarker(marker)) {
      if (i + 7 > b.length) return undefined;
      return {
        mediaType: 'image/jpeg' as const,
        height: b.readUInt16BE(i + 3),
        width: b.readUInt16BE(i + 5),
      };
    }
    i += length;
  }
  return undefined;
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*);base64,(.*)$/is;

function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/\s+/g, '');
  if (compact.length === 0 || !BASE64.test(compact)) return undefined;
  const bytes = Buffer.from(compact, compact.includes('-') || compact.includes('_') ? 'base64url' : 'base64');
  return bytes.length > 0 ? bytes : undefined;
}

function decodeDataUrl(url: string): { bytes: Buffer; mediaType: string } | undefined {
  const m = DATA_URL.exec(url.trim());
  if (!m) return undefined;
  const bytes = decodeBase64(m[3] ?? '');
  return bytes && { bytes, mediaType: (m[1] ?? '').trim().toLowerCase() };
}

/**
 * The bytes of an inline image: an Anthropic base64 source (data + media type) or a base64 data URL
 * (`data:image/png;base64,...`, whichever kind of source carries it). Remote URLs and malformed data
 * give undefined.
 */
export function decodeImageSource(source: ImageSource): { bytes: Buffer; mediaType: string } | undefined {
  if (source.kind === 'url') return decodeDataUrl(source.url);
  if (/^\s*data:/i.test(source.data)) return decodeDataUrl(source.data);
  const bytes = decodeBase64(source.data);
  return bytes && { bytes, mediaType: source.mediaType.trim().toLowerCase() };
}

const TEAM_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** Read-only, content-addressed copies of images. */
export class AttachmentStore {
  readonly dir: string;

  constructor(opts: { dir: string }) {
    this.dir = opts.dir;
  }

  /**
   * The store of one team's images (`<dir>/teams/<team>/`); without a team (an open gateway, an
   * admin's chat) this store itself.
   */
  forTeam(team: string | undefined): AttachmentStore {
    if (team === undefined) return this;
    if (!TEAM_NAME.test(team) || team === '.' || team === '..') {
      throw new Error(`not a team name: ${JSON.stringify(team)}`);
    }
    return new AttachmentStore({ dir: join(this.dir, 'teams', team) });
  }

  /**
   * Stores an image once by content hash (`<sha256>.<ext>`, mode 0444) and describes it. Refuses
   * bytes that are not a PNG, JPEG, WebP or GIF image (OdaError 400).
   */
  async put(
    bytes: Buffer,
    declaredMediaType?: string,
  ): Promise<{ attachment: ImageAttachment; path: string }> {
    const described = describeImage(bytes);
    if (!described) {
      const declared = declaredMediaType ? ` (declared ${declaredMediaType})` : '';
      throw new OdaError(
        'ODA_ERR_INVALID_REQUEST',
        400,
        `image data${declared} is not a PNG, JPEG, WebP or GIF image`,
      );
    }
    const attachment: ImageAttachment = {
      sha256: sha256Hex(bytes),
      mediaType: described.mediaType,
      bytes: bytes.length,
      width: described.width,
      height: described.height,
    };
    const path = await this.writeOnce(bytes, attachment.sha256, EXTENSIONS[described.mediaType]);
    return { attachment, path };
  }

  /** Where the read-only copy of an attachment lives. */
  pathFor(attachment: Pick<ImageAttachment, 'sha256' | 'mediaType'>): string {
    return join(this.dir, `${attachment.sha256}.${EXTENSIONS[attachment.mediaType]}`);
  }

  private async writeOnce(bytes: Buffer, sha256: string, ext: string): Promise<string> {
    const path = join(this.dir, `${sha256}.${ext}`);
    const existing = await fsp.stat(path).catch(() => undefined);
    // Same name means same bytes; a size mismatch can only be a damaged copy, which is replaced.
    if (existing && existing.size === bytes.length) return path;
    await fsp.mkdir(this.dir, { recursive: true });
    const tmp = join(this.dir, `.${sha256}.${randomBytes(6).toString('hex')}.tmp`);
    const fh = await fsp.open(tmp, 'wx', 0o444);
    try {
      await fh.writeFile(bytes);
      await fh.chmod(0o444);
      await fh.datasync();
    } finally {
      await fh.close();
    }
    try {
      // Rename is atomic: readers see no copy or the whole copy, and a racing writer's copy is identical.
      await fsp.rename(tmp, path);
    } catch (err) {
      await fsp.rm(tmp, { force: true });
      throw err;
    }
    return path;
  }
}
