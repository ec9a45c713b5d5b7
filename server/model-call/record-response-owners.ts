/**
 * The records that let a team reach what its Responses calls created (SPEC section 9): a response's
 * owner as soon as the answer names its id, and, once the answer is logged, the chat it went to and
 * its output items (which a later `item_reference` names). Read by `server/response-access.ts`
 * and `server/response-references.ts`.
 */
import type { ResponseOwners } from '../../chat-log/response-owners.ts';
import type { AppContext } from '../app-context.ts';
import type { ResponseRecord } from '../chat-binder.ts';
import type { Logger } from '../logger.ts';

/**
 * Whose answer is recorded: the team that owns it, the provider that served it, the call's log (a
 * model call; or the retrieve that found a background answer finished, on its creator's behalf).
 */
export interface OwnedAnswer {
  readonly caller: { readonly team: string | undefined };
  readonly provider: { readonly config: { readonly name: string } };
  readonly log: Logger;
}

/** Output items recorded at once: an answer of many items never opens a file per item all together. */
const ITEM_BATCH = 16;

/**
 * Once an answer is logged in `chatId`: its response id follows it when that is another chat than
 * the one it was bound to (a branch), and its output items, which a later `item_reference` names,
 * are recorded as the caller's team's.
 */
export async function recordLoggedOwners(
  app: AppContext,
  call: OwnedAnswer,
  boundChatId: string,
  r: ResponseRecord,
  chatId: string,
): Promise<void> {
  const responseId = r.response?.responseId;
  if (responseId && chatId !== boundChatId)
    await recordOwner(app, app.responseOwners, call, responseId, chatId);
  // Item references are checked only with teams (an open gateway passes them through), so only
  // then are the items worth a record each.
  const items = app.passThroughCredentials ? [] : (r.response?.itemIds ?? []);
  for (let i = 0; i < items.length; i += ITEM_BATCH) {
    await Promise.all(
      items.slice(i, i + ITEM_BATCH).map((id) => recordOwner(app, app.itemOwners, call, id, chatId)),
    );
  }
}

/**
 * Records that `id` (a response, or an output item of one) belongs to the caller's team, its chat
 * and provider (SPEC section 9). The first team recorded keeps it: an id already owned by another
 * team (which a provider never hands out twice) is left to that team, so no answer can move stored
 * state into another team's reach.
 */
async function recordOwner(
  app: AppContext,
  owners: ResponseOwners,
  call: OwnedAnswer,
  id: string,
  chatId: string,
): Promise<void> {
  const team = call.caller.team;
  // Without teams no owner is checked: the record is written without reading it first.
  const known = app.passThroughCredentials ? undefined : await owners.get(id);
  if (known && known.team !== team) {
    call.log.warn({ id }, 'id already recorded for another owner; left as it was');
    return;
  }
  await owners.set(id, {
    chatId,
    provider: call.provider.config.name,
    ...(team ? { team } : {}),
  });
}

/** `recordOwner` while the answer is delivered: a failure is logged, never thrown at the client. */
export async function recordOwnerSafely(
  app: AppContext,
  call: OwnedAnswer,
  responseId: string,
  chatId: string,
): Promise<void> {
  try {
    await recordOwner(app, app.responseOwners, call, responseId, chatId);
  } catch (err) {
    app.logger.error({ err, responseId }, 'could not record the owner of a response');
  }
}
