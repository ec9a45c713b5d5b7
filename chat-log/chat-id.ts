/**
 * Chat ids name files and keys, so they are checked before they touch a path: 1-128 characters of
 * `A-Za-z0-9._:-`, never `.` or `..`. The resolved path is checked again to stay inside its
 * folder (defence in depth: a later change to the pattern must not open a path trick).
 */
import { resolve, sep } from 'node:path';
import { OdaError } from '../lib/errors.ts';

const CHAT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The 404 every chat-log layer answers for a chat that does not exist. */
export const notFound = (id: string): OdaError =>
  new OdaError('ODA_ERR_NOT_FOUND', 404, `no chat with id "${id}"`);

/**
 * The 404 for a chat whose log went away under the gateway (its file removed by hand): the chat is
 * forgotten, and a caller that was going to write to it may create it anew instead.
 */
export class ChatRemoved extends OdaError {
  constructor(id: string) {
    super('ODA_ERR_NOT_FOUND', 404, `no chat with id "${id}"`);
  }
}

/** True when `id` is a well-formed chat id. */
export function isChatId(id: unknown): id is string {
  return typeof id === 'string' && CHAT_ID.test(id) && id !== '.' && id !== '..';
}

/**
 * Up to this many chats under an id prefix, a page sorts them from an index by id (the file store's
 * primary key, the Redis store's id set); past it, the activity index finds a page's worth of them
 * sooner. At 100,000 chats on the file store: a prefix of one chat took 17.9 ms along the activity
 * index and 0.015 ms from the key; one of all of them 0.14 ms along the index and 17.2 ms from the key.
 */
export const NARROW_PREFIX = 500;

/**
 * The least string above every id that starts with `prefix` (ids are ASCII, compared bytewise), or
 * undefined when the prefix is not printable ASCII or ends in the last printable character.
 */
export function prefixEnd(prefix: string): string | undefined {
  if (!/^[\x20-\x7e]*[\x20-\x7d]$/.test(prefix)) return undefined;
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/** The `.b<12 hex>` a branch's id adds to the (cut) id of the chat it branched from. */
const BRANCH_SUFFIXES = /(?:\.b[0-9a-f]{12})+$/;

/**
 * The id of the branch of `base` named by `hash` (12 hex characters): `base` cut to leave room for
 * the suffix, then `.b<hash>`; still a chat id.
 */
export function branchChatId(base: string, hash: string): string {
  return `${base.slice(0, 128 - 14)}.b${hash}`;
}

/**
 * The chat a branch (or a branch of a branch) was made from: `id` without its branch suffixes, or
 * `id` itself when it has none. A base over 114 characters was cut in the branch's id, so the
 * answer is then that cut id.
 */
export function branchRoot(id: string): string {
  return id.replace(BRANCH_SUFFIXES, '') || id;
}

/** Throws a 400 OdaError unless `id` is a well-formed chat id. */
export function assertChatId(id: unknown, what = 'chat id'): asserts id is string {
  if (!isChatId(id)) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      `${what} must be 1-128 characters of A-Za-z0-9._:- (not . or ..), got ${JSON.stringify(String(id)).slice(0, 160)}`,
      { param: what },
    );
  }
}

/** `dir/<name><suffix>`, refused unless `name` is a chat id and the result stays inside `dir`. */
export function pathInside(dir: string, name: string, suffix = '', what = 'chat id'): string {
  assertChatId(name, what);
  const root = resolve(dir);
  const full = resolve(root, name + suffix);
  if (!full.startsWith(root + sep) || full.length <= root.length + 1) {
    throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, `${what} resolves outside its folder`, {
      param: what,
    });
  }
  return full;
}
