/**
 * Reads of a range of events from an open chat's file (`store-file.ts`). The byte range comes from
 * the chat's line offsets, so nothing is scanned; bounds are snapshotted before the first await, as
 * later appends only add bytes after `size`.
 */
import { promises as fsp } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { OdaError } from '../lib/errors.ts';
import type { EventLines } from './store.ts';
import type { Event } from './format/current.ts';
import { parseEventLine } from './event-batch.ts';
import type { ChatFile } from './chat-file.ts';

/** Bytes read from a chat file at once by a streamed read. */
const READ_CHUNK = 1024 * 1024;

/** Fills `buf` from `position` of the file; a file that ends first is a log shorter than its index. */
async function readFully(fh: FileHandle, buf: Buffer, position: number, id: string): Promise<void> {
  let got = 0;
  while (got < buf.length) {
    const { bytesRead } = await fh.read(buf, got, buf.length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  if (got < buf.length) {
    throw new OdaError('ODA_ERR_LOG_READ', 500, `chat log ${id} is shorter than its index`);
  }
}

/** Events `offset` to `offset + length` (or to the end) of an open chat, read in one go. */
export async function readEvents(c: ChatFile, offset: number, length?: number): Promise<Event[]> {
  const id = c.id;
  // Snapshot the bounds first: later appends only add bytes after `size`.
  const count = c.offsets.length;
  const size = c.size;
  const start = Math.min(offset, count);
  const end = length === undefined ? count : Math.min(count, start + length);
  if (start >= end) return [];
  const from = c.offsets[start] ?? size;
  const to = end < count ? (c.offsets[end] ?? size) : size;
  const buf = Buffer.alloc(to - from);
  const fh = await fsp.open(c.path, 'r');
  try {
    await readFully(fh, buf, from, id);
  } finally {
    await fh.close();
  }
  const lines = buf.toString('utf8').split('\n');
  const out: Event[] = [];
  for (let i = 0; i < end - start; i++) out.push(parseEventLine(lines[i] ?? '', id, start + i));
  return out;
}

/**
 * Stored event lines of an open chat from `offset`, checked as they are read: at most `maxEvents`,
 * and no more than `maxBytes` of lines unless the first line alone is larger. The file is read in
 * chunks of at most 1 MB of whole lines.
 */
export function readEventLines(c: ChatFile, offset: number, maxEvents: number, maxBytes: number): EventLines {
  const id = c.id;
  const count = c.offsets.length;
  const size = c.size;
  const start = Math.min(offset, count);
  const endOf = (k: number) => (k + 1 < count ? c.offsets[k + 1]! : size);
  const from = c.offsets[start] ?? size;
  let end = start;
  while (end < count && end - start < maxEvents && (end === start || endOf(end) - from <= maxBytes)) end++;
  const offsets = c.offsets.slice(start, end + 1);
  const path = c.path;
  async function* lines(): AsyncGenerator<string> {
    if (start >= end) return;
    const fh = await fsp.open(path, 'r');
    try {
      for (let k = start; k < end;) {
        // Whole lines k..j-1, at most READ_CHUNK bytes (or one longer line).
        const lineStart = offsets[k - start]!;
        let j = k + 1;
        while (j < end && (offsets[j + 1 - start] ?? size) - lineStart <= READ_CHUNK) j++;
        const lineEnd = offsets[j - start] ?? size;
        const buf = Buffer.alloc(lineEnd - lineStart);
        await readFully(fh, buf, lineStart, id);
        for (let i = k; i < j; i++) {
          const a = offsets[i - start]! - lineStart;
          const b = (offsets[i + 1 - start] ?? size) - lineStart - 1;
          const line = buf.toString('utf8', a, b);
          parseEventLine(line, id, i);
          yield line;
        }
        k = j;
      }
    } finally {
      await fh.close();
    }
  }
  return { count, lines: lines() };
}
