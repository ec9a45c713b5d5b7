/**
 * Stored state a Responses request names besides `previous_response_id` (SPEC section 9): a
 * `conversation`, and `item_reference`s in `input`. With teams the gateway's own provider key
 * resolves them, so the gateway decides, as for stored responses: an output item the gateway
 * logged for another team's response, or one it never saw, answers 404 like a missing item; a
 * conversation is always one the gateway never saw (it does not serve `/v1/conversations`, so no
 * team created one through it) and answers 404 like a missing conversation. Admin keys reach all;
 * without teams everything is forwarded as it is.
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-conversation
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-input
 */
import { OdaError } from '../lib/errors.ts';
import type { AppContext } from './app-context.ts';
import type { Caller } from './auth.ts';
import { mayUseResponse } from './response-access.ts';

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

/**
 * For `POST /v1/responses` (and `input_tokens`, `compact`): with teams, refuses a `conversation`
 * (404; a value that is neither a string nor an object with a string `id` is a 400 naming the
 * field), an item reference to an item of another team or never seen by the gateway (404), and a
 * typed item carrying the id of an item logged for another team (404). Admins and gateways without
 * teams pass everything on.
 */
export async function checkStoredReferences(
  app: AppContext,
  body: Record<string, unknown>,
  caller: Caller,
): Promise<void> {
  if (app.passThroughCredentials || caller.admin) return;
  const conversation = body.conversation;
  if (conversation !== undefined && conversation !== null) {
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
  const ids = itemReferenceIds(body.input);
  for (let i = 0; i < ids.length; i += LOOKUP_BATCH) {
    const batch = ids.slice(i, i + LOOKUP_BATCH);
    const owners = await Promise.all(
      batch.map((id) => (id.length > 0 && id.length <= MAX_ITEM_ID ? app.itemOwners.get(id) : undefined)),
    );
    const refused = batch.findIndex((_, j) => !mayUseResponse(app, caller, owners[j]));
    if (refused >= 0) throw itemNotFound(batch[refused]!);
  }
  // A typed item naming an item the gateway logged for another team is refused like a reference
  // to it; one the gateway never saw passes (the client's own history, sent without storing).
  const typed = typedItemIds(body.input);
  for (let i = 0; i < typed.length; i += LOOKUP_BATCH) {
    const batch = typed.slice(i, i + LOOKUP_BATCH);
    const owners = await Promise.all(batch.map((id) => app.itemOwners.ownerOf(id)));
    const refused = batch.findIndex(
      (_, j) => owners[j] !== undefined && !mayUseResponse(app, caller, owners[j]),
    );
    if (refused >= 0) throw itemNotFound(batch[refused]!);
  }
}
