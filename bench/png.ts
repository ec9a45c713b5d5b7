/** Small valid PNG files for the benchmarks' screenshots and image-heavy bodies (no dependency). */
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/**
 * An RGB PNG of `width` x `height`. `noise` 1 makes every pixel random (incompressible, so the file
 * is about width*height*3 bytes); 0 makes a flat screenshot-like picture of a few kilobytes.
 */
export function makePng(width: number, height: number, seed: number, noise = 0): Buffer {
  let s = seed >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) & 0xff;
  };
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    raw[row] = 0;
    for (let x = 0; x < width; x++) {
      const o = row + 1 + x * 3;
      if (noise > 0) {
        raw[o] = rand();
        raw[o + 1] = rand();
        raw[o + 2] = rand();
      } else {
        // Bands of "UI": a header bar, text-like stripes, a seed-dependent accent.
        const band = y < height / 10 ? 40 : (y >> 3) % 3 === 0 && x % 7 < 5 ? 90 : 240;
        raw[o] = band;
        raw[o + 1] = band;
        raw[o + 2] = (band + seed * 37) & 0xff;
      }
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw, { level: noise > 0 ? 0 : 6 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
