/**
 * The file store's reads (`store-file.ts`) that notice a chat file removed behind the store: a
 * read that finds the file gone forgets the chat's state and opens it again (`OpenChats.reopenGone`),
 * so the chat is a 404 as in the Redis store, not an empty read for ever. The ranges themselves are
 * read by `file-read-events.ts`.
 */
import { promises as fsp } from 'node:fs';
import { isOdaError } from '../lib/errors.ts';
import type { EventLines } from './store.ts';
import type { Event, Header } from './format/current.ts';
import type { ChatFile } from './chat-file.ts';
import { readEventLines, readEvents } from './file-read-events.ts';
import type { OpenChats } from './file-open-chats.ts';

/** A chat found gone while being opened again: absent rather than a 404. */
const absentIfNotFound = (err: unknown): undefined => {
  if (isOdaError(err) && err.code === 'ODA_ERR_NOT_FOUND') return undefined;
  throw err;
};

/**
 * The header of chat `id`, once its file is found still there (one `access`): a chat open in memory
 * answers `header` without looking, also after its file was removed behind the store. A chat found
 * gone is forgotten as by `checkedRead` (and leaves the index): no header.
 */
export async function checkedHeader(open: OpenChats, id: string): Promise<Header | undefined> {
  const c = await open.chat(id);
  if (!c) return undefined;
  try {
    await fsp.access(c.path);
    return c.header;
  } catch (err) {
    return (await open.reopenGone(id, c, err).catch(absentIfNotFound))?.header;
  }
}

/** Events `offset` to `offset + length` (or to the end) of chat `id`. */
export async function checkedRead(
  open: OpenChats,
  id: string,
  offset: number,
  length?: number,
): Promise<Event[]> {
  const c = await open.existing(id);
  try {
    const events = await readEvents(c, offset, length);
    // An empty range reads nothing from the file: check that it is still there, so a chat whose
    // file was removed is a 404 here as in the Redis store, not an empty read for ever (a live
    // tail at the end of the log reads only such ranges).
    if (events.length === 0) await fsp.access(c.path);
    return events;
  } catch (err) {
    return readEvents(await open.reopenGone(id, c, err), offset, length);
  }
}

/** `lines` of chat `id`, open as `c`; a file found gone while reading is handled as by `checkedRead`. */
async function* linesOf(
  open: OpenChats,
  id: string,
  c: ChatFile,
  lines: AsyncIterable<string>,
): AsyncGenerator<string> {
  try {
    yield* lines;
  } catch (err) {
    await open.reopenGone(id, c, err);
    throw err;
  }
}

/**
 * Stored event lines of chat `id` from `offset`, checked as they are read: at most `maxEvents`, and
 * no more than `maxBytes` of lines unless the first line alone is larger (`readEventLines`).
 */
export async function checkedReadLines(
  open: OpenChats,
  id: string,
  offset: number,
  maxEvents: number,
  maxBytes: number,
): Promise<EventLines> {
  const opened = await open.existing(id);
  let c = opened;
  // A read at the end of the log reads nothing from the file: check it is there, as `checkedRead` does.
  if (offset >= opened.offsets.length) {
    try {
      await fsp.access(opened.path);
    } catch (err) {
      c = await open.reopenGone(id, opened, err);
    }
  }
  const read = readEventLines(c, offset, maxEvents, maxBytes);
  return { count: read.count, lines: linesOf(open, id, c, read.lines) };
}
