/**
 * The chat a session route's `:id` names for the caller: team ids are scoped into the caller's
 * namespace, a malformed id is a 400, and another team's chat answers 404 exactly like a chat that
 * does not exist (SPEC section 8).
 */
import type { Request, Response } from 'express';
import { OdaError } from '../lib/errors.ts';
import { assertChatId } from '../chat-log/chat-id.ts';
import type { AppContext } from './app-context.ts';
import type { Caller } from './auth.ts';
import { scopedChatId, visibleTo } from './team-scope.ts';

export type ChatHeader = NonNullable<Awaited<ReturnType<AppContext['chatLog']['header']>>>;

/** The caller `authenticate` put on the response. */
export function callerOf(res: Response): Caller {
  return res.locals.caller as Caller;
}

/**
 * The chat id and header the route's `:id` names, if the caller may see it; else 400 or 404.
 * `checked`: the chat's log is found still stored first (`ChatLog.checkedHeader`, one stat on the
 * file store), so a chat whose log was removed behind the gateway is the 404 of a chat that never
 * was, not answered from what memory holds of it.
 */
export async function visibleChat(
  app: AppContext,
  req: Request,
  res: Response,
  opts: { checked?: boolean } = {},
): Promise<{ id: string; header: ChatHeader }> {
  const who = callerOf(res);
  const given = req.params.id;
  assertChatId(given);
  const id = scopedChatId(given, who);
  const header = await (opts.checked ? app.chatLog.checkedHeader(id) : app.chatLog.header(id));
  if (!header || !visibleTo(header.team, who)) {
    throw new OdaError('ODA_ERR_NOT_FOUND', 404, `no chat with id "${id}"`);
  }
  return { id, header };
}
