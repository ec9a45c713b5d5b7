/**
 * Tiny real images for tests, built byte by byte: a complete 1-colour PNG and GIF, and the headers
 * of JPEG (baseline and progressive) and WebP (VP8, VP8L, VP8X) that decoders read dimensions from.
 */
import { crc32, deflateSync } from 'node:zlib';

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A valid RGBA PNG of `width` x `height` transparent pixels. */
export function makePng(width: number, height: number, fill = 0): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 4, fill)]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A valid GIF89a of `width` x `height` pixels, all colour 0. */
export function makeGif(width: number, height: number): Buffer {
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(width, 0);
  screen.writeUInt16LE(height, 2);
  screen.set([0x80, 0, 0], 4); // global colour table of 2 entries
  const descriptor = Buffer.alloc(10);
  descriptor[0] = 0x2c;
  descriptor.writeUInt16LE(width, 5);
  descriptor.writeUInt16LE(height, 7);
  return Buffer.concat([
    Buffer.from('GIF89a', 'latin1'),
    screen,
    Buffer.from([0, 0, 0, 0xff, 0xff, 0xff]),
    descriptor,
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00, 0x3b]),
  ]);
}

function segment(marker: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = marker;
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([head, payload]);
}

/** JPEG headers: SOI, APP0 (JFIF), DQT, DHT, then a frame header `sof` (0xc0 baseline, 0xc2 progressive). */
export function makeJpeg(width: number, height: number, sof = 0xc0): Buffer {
  const frame = Buffer.alloc(15);
  frame[0] = 8;
  frame.writeUInt16BE(height, 1);
  frame.writeUInt16BE(width, 3);
  frame[5] = 3;
  frame.set([1, 0x11, 0, 2, 0x11, 1, 3, 0x11, 1], 6);
  return Buffer.concat([
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, Buffer.from([0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0])),
    segment(0xdb, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)])),
    // A DHT segment whose length bytes would read as a plausible size if taken for a frame header.
    segment(0xc4, Buffer.concat([Buffer.from([0, 0, 1, 0x99, 0x99]), Buffer.alloc(13)])),
    segment(sof, frame),
    Buffer.from([0xff, 0xd9]),
  ]);
}

function riff(chunk: string, payload: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.write(chunk, 0, 'latin1');
  head.writeUInt32LE(payload.length, 4);
  const body = Buffer.concat([Buffer.from('WEBP', 'latin1'), head, payload]);
  const riffHead = Buffer.alloc(8);
  riffHead.write('RIFF', 0, 'latin1');
  riffHead.writeUInt32LE(body.length, 4);
  return Buffer.concat([riffHead, body]);
}

/** WebP headers in one of the three bitstream kinds. */
export function makeWebp(width: number, height: number, kind: 'VP8' | 'VP8L' | 'VP8X'): Buffer {
  if (kind === 'VP8') {
    const p = Buffer.alloc(10);
    p.set([0x50, 0x01, 0x00, 0x9d, 0x01, 0x2a], 0);
    p.writeUInt16LE(width, 6);
    p.writeUInt16LE(height, 8);
    return riff('VP8 ', p);
  }
  if (kind === 'VP8L') {
    const p = Buffer.alloc(5);
    p[0] = 0x2f;
    p.writeUInt32LE(((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14), 1);
    return riff('VP8L', p);
  }
  const p = Buffer.alloc(10);
  p.writeUIntLE(width - 1, 4, 3);
  p.writeUIntLE(height - 1, 7, 3);
  return riff('VP8X', p);
}
