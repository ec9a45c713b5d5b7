/**
 * Stored state a Responses request names besides `previous_response_id` (SPEC section 9): a
 * `conversation`, and `item_reference`s in `input`. With teams the gateway's own provider key
 * resolves them, so the gateway decides, as for stored responses: an output item the gateway
 * logged for another team's response, or one it never saw, answers 404 like a missing item; a
 * conversation is always one the gateway never saw (it does not serve `/v1/conversations`, so no
 * team created one through it) and answers 404 like a missing conversation. Admin keys reach all;
 * without teams everything is forwarded as it is. An item is held by the provider that served its
 * response: named in a request whose model routes to another OpenAI-format provider, it is the
 * gateway's 400 naming both (that provider would only answer that it found no such item).
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-conversation
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-input
 */
import { OdaError } from '../lib/errors.ts';
import type { ResponseOwner } from '../chat-log/response-owners.ts';
import { PROVIDER_FORMAT } from '../providers/registry.ts';
import type { AppContext } from './app-context.ts';
import type { Caller } from './auth.ts';
import { heldElsewhere, mayUseResponse } from './response-access.ts';

/** Item ids looked up at once; a request may hold thousands of items (`server.maxMessages`). */
const LOOKUP_BATCH = 16;

/** The longest item id looked up; anything longer was never recorded, so it is refused unread. */
const MAX_ITEM_ID = 512;

function isObj(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The 404 of an item the caller may not reach, worded like OpenAI's own. */
function itemNotFound(id: string): OdaError {
  return new OdaError('ODA_ERR_NOT_FOUND', 404, `Item with id '${id}' not found.`, { param: 'input' });
}

/** The 404 of a conversation the caller may not reach, worded like OpenAI's own. */
function conversationNotFound(id: string): OdaError {
  return new OdaError('ODA_ERR_NOT_FOUND', 404, `Conversation with id '${id}' not found.`, {
    param: 'conversation',
  });
}

/**
 * The ids of `input`'s item references: `{"type": "item_reference", "id"}`, or an item with an
 * `id` and neither a `type` nor a `role` (the API's type is optional on a reference). Each id once.
 */
export function itemReferenceIds(input: unknown): string[] {
  if (!Array.isArray(input)) return [];
  const ids = new Set<string>();
  for (const item of input) {
    if (!isObj(item) || typeof item.id !== 'string') continue;
    const typed = item.type !== undefined && item.type !== null;
    if (item.type === 'item_reference' || (!typed && item.role === undefined)) ids.add(item.id);
  }
  return [...ids];
}

/**
 * The provider's ids the other items of `input` carry (a `reasoning`, `message` or
 * `function_call` item sent back with its `id`): the provider may look such an item up by its id
 * (a stored reasoning item), so an id is as good as a reference to whoever holds it. Each id once.
 */
export function typedItemIds(input: unknown): string[] {
  if (!Array.isArray(input)) return [];
  const ids = new Set<string>();
  for (const item of input) {
    if (!isObj(item) || typeof item.id !== 'string' || item.id.length === 0 || item.id.length > MAX_ITEM_ID)
      continue;
    const typed = item.type !== undefined && item.type !== null;
    if (item.type !== 'item_reference' && (typed || item.role !== undefined)) ids.add(item.id);
  }
  return [...ids];
}

/** Where a request goes: its `model`, and the provider that model routes to. */
export interface ReferenceRoute {
  model: string;
  provider: string;
}

/**
 * The 400 of an item the gateway logged as held by `holder`, named in a request whose model routes
 * to another provider, which would only answer that it found no such item.
 */
function heldByAnother(id: string, reference: boolean, holder: string, route: ReferenceRoute): OdaError {
  const what = reference ? `item_reference '${id}'` : `input item id '${id}'`;
  const instead = reference ? 'send the item itself instead of a reference' : 'send the item without its id';
  return new OdaError(
    'ODA_ERR_INVALID_REQUEST',
    400,
    `${what} is held by provider "${holder}", but model "${route.model}" routes to provider ` +
      `"${route.provider}", which cannot find it: use a model "${holder}" serves, or ${instead}`,
    { param: 'input' },
  );
}

/** Refuses a `conversation` (with teams, none was created through the gateway). */
function checkConversation(conversation: unknown): void {
  if (conversation === undefined || conversation === null) return;
  const id =
    typeof conversation === 'string' ? conversation : isObj(conversation) ? conversation.id : undefined;
  if (typeof id !== 'string') {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      'conversation must be a string or an object with a string id',
      { param: 'conversation' },
    );
  }
  throw conversationNotFound(id);
}

/**
 * For `POST /v1/responses` (and `input_tokens`, `compact`): with teams, refuses a `conversation`
 * (404; a value that is neither a string nor an object with a string `id` is a 400 naming the
 * field), an item reference to an item of another team or never seen by the gateway (404), and a
 * typed item carrying the id of an item logged for another team (404). Given the request's `route`,
 * also refuses (400, naming both providers) a reference or typed item id the gateway logged as an
 * output item of another OpenAI-format provider than the one the model routes to, as
 * `checkPreviousProvider` does for `previous_response_id`: that provider holds no such item. Ids
 * the gateway never logged go as sent. Without teams the gateway logs no items, and everything is
 * passed on.
 */
export async function checkStoredReferences(
  app: AppContext,
  body: Record<string, unknown>,
  caller: Caller,
  route?: ReferenceRoute,
): Promise<void> {
  if (app.passThroughCredentials) return;
  const teams = !caller.admin;
  if (teams) checkConversation(body.conversation);
  // Where an item is held matters only when another OpenAI-format provider could hold it.
  const byHolder =
    route !== undefined && app.registry.all().filter((p) => p.format === PROVIDER_FORMAT.responses).length > 1
      ? route
      : undefined;
  if (!teams && !byHolder) return;
  /** Refuses the item `id` of `owner`: another team's (404) or held by another provider (400). */
  const check = (id: string, owner: ResponseOwner | undefined, reference: boolean) => {
    // A reference to an item never logged is the 404 with teams; a typed item's id goes as sent.
    if ((reference || owner !== undefined) && !mayUseResponse(app, caller, owner)) throw itemNotFound(id);
    const holder = byHolder && heldElsewhere(app, owner, byHolder.provider);
    if (holder) throw heldByAnother(id, reference, holder.name, byHolder);
  };
  const ids = itemReferenceIds(body.input);
  for (let i = 0; i < ids.length; i += LOOKUP_BATCH) {
    const batch = ids.slice(i, i + LOOKUP_BATCH);
    const owners = await Promise.all(
      batch.map((id) => (id.length > 0 && id.length <= MAX_ITEM_ID ? app.itemOwners.get(id) : undefined)),
    );
    batch.forEach((id, j) => check(id, owners[j], true));
  }
  // A typed item naming an item the gateway logged for another team is refused like a reference
  // to it; one the gateway never saw passes (the client's own history, sent without storing).
  const typed = typedItemIds(body.input);
  for (let i = 0; i < typed.length; i += LOOKUP_BATCH) {
    const batch = typed.slice(i, i + LOOKUP_BATCH);
    const owners = await Promise.all(batch.map((id) => app.itemOwners.ownerOf(id)));
    batch.forEach((id, j) => check(id, owners[j], false));
  }
}
