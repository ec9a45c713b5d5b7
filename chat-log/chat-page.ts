/**
 * Paging the chat list, the same way on every store: newest activity first (ties by id, descending),
 * `limit` chats per page and an opaque cursor naming the position after the last chat returned
 * (its last activity and id). A cursor is a position, not a snapshot: chats created or active after
 * the first page went out rise to the top of the list and never shift, repeat or hide the chats of
 * later pages; a chat active while a client pages moves up and is not shown again further down.
 */
import { z } from 'zod';
import { OdaError } from '../lib/errors.ts';
import { isChatId } from './chat-id.ts';

/** Chats per page unless asked otherwise, and the most one page holds. */
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 500;

/** A position in the list: the last activity and the id of the last chat a page returned. */
export interface ChatCursor {
  lastActivityAt: number;
  id: string;
}

/** What one page asks for; every filter is optional and they combine (and). */
export interface ChatListQuery {
  /** 1..MAX_PAGE_LIMIT. */
  limit: number;
  /** Start after this position (from a previous page's `nextCursor`). */
  after?: ChatCursor;
  /** Only chats of this team (the header's `team`). */
  team?: string;
  /** Only chats whose id starts with this text. */
  idPrefix?: string;
  /** Only chats whose id contains this text. */
  idContains?: string;
  /** Only chats last active at or after this time (ms since the epoch). */
  activeFrom?: number;
  /** Only chats last active before this time (ms since the epoch). */
  activeTo?: number;
}

/** One line of the chat list. */
export interface ChatSummary {
  id: string;
  createdAt: number;
  parent?: string;
  team?: string;
  /** The header's working directory, when the client gave one (a cheap title). */
  cwd?: string;
  eventCount: number;
  lastActivityAt: number;
}

export interface ChatPage {
  chats: ChatSummary[];
  /** The position after the last chat of this page when more chats may follow, else undefined. */
  next?: ChatCursor;
  /** True while the store is still (re)building its index: the list may be missing chats. */
  indexing?: boolean;
}

/** A bad list parameter: a 400 naming it (`name`: its name where it was given). */
function badParam(name: string, message: string): OdaError {
  return new OdaError('ODA_ERR_INVALID_REQUEST', 400, `${name} ${message}`, { param: name });
}

/**
 * The parameters of a chat list page, read as `GET /v1/sessions` reads its query and
 * `oda-gateway log list` its options; each throws a 400 naming the parameter (`name`).
 * A page size: digits only, 1 to {@link MAX_PAGE_LIMIT}; the default when absent.
 */
export function readPageLimit(text: string | undefined, name: string): number {
  const limit = text === undefined ? DEFAULT_PAGE_LIMIT : /^[0-9]{1,4}$/.test(text) ? Number(text) : 0;
  if (limit < 1 || limit > MAX_PAGE_LIMIT) {
    throw badParam(name, `must be a whole number from 1 to ${MAX_PAGE_LIMIT}, got ${JSON.stringify(text)}`);
  }
  return limit;
}

/** An id filter (`id_prefix`, `id_contains`): 1-128 characters. */
export function readIdFilter(text: string | undefined, name: string): string | undefined {
  if (text !== undefined && (text.length < 1 || text.length > 128)) {
    throw badParam(name, 'must be 1-128 characters');
  }
  return text;
}

/** A time bound (`from`, `to`): milliseconds since the epoch, or an ISO 8601 date or date-time. */
export function readTimeBound(text: string | undefined, name: string): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^[0-9]{1,16}$/.test(text)
    ? Number(text)
    : /^\d{4}-\d{2}-\d{2}/.test(text)
      ? Date.parse(text)
      : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw badParam(
      name,
      `must be milliseconds since the epoch or an ISO 8601 date, got ${JSON.stringify(text)}`,
    );
  }
  return ms;
}

const cursorShape = z.tuple([z.number().int().nonnegative(), z.string().refine(isChatId)]);

/** The opaque text form of a cursor (base64url of a small JSON array). */
export function encodeCursor(c: ChatCursor): string {
  return Buffer.from(JSON.stringify([c.lastActivityAt, c.id]), 'utf8').toString('base64url');
}

/** A cursor read back; a 400 naming `cursor` when it is not one this gateway gave out. */
export function decodeCursor(text: string): ChatCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const ok = /^[A-Za-z0-9_-]{1,400}$/.test(text) ? cursorShape.safeParse(parsed) : undefined;
  if (!ok?.success) {
    throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'cursor is not a cursor this gateway gave out', {
      param: 'cursor',
    });
  }
  return { lastActivityAt: ok.data[0], id: ok.data[1] };
}

/** True when `s` comes after the cursor position in list order (older, or as old with a lower id). */
export function isAfter(s: { lastActivityAt: number; id: string }, c: ChatCursor | undefined): boolean {
  if (!c) return true;
  return s.lastActivityAt < c.lastActivityAt || (s.lastActivityAt === c.lastActivityAt && s.id < c.id);
}

/** True when a summary passes the query's filters (the cursor aside). */
export function matches(s: ChatSummary, q: ChatListQuery): boolean {
  return (
    (q.team === undefined || s.team === q.team) &&
    (q.idPrefix === undefined || s.id.startsWith(q.idPrefix)) &&
    (q.idContains === undefined || s.id.includes(q.idContains)) &&
    (q.activeFrom === undefined || s.lastActivityAt >= q.activeFrom) &&
    (q.activeTo === undefined || s.lastActivityAt < q.activeTo)
  );
}

/** List order: newest activity first, then id descending (the order cursors follow). */
export function byActivity(a: ChatSummary, b: ChatSummary): number {
  if (a.lastActivityAt !== b.lastActivityAt) return b.lastActivityAt - a.lastActivityAt;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
