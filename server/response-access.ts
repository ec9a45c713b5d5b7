/**
 * Who may reach a stored response (SPEC section 9). With teams, the gateway's own provider key
 * fetches stored responses, so the provider cannot tell teams apart: the gateway does. A response
 * belongs to the team whose request created it (recorded in `responseOwners` as soon as the answer
 * names its id, before the client can: the first event of a stream, or the whole JSON answer);
 * another team's id, or one the gateway never saw, answers 404 exactly like a missing
 * one, also when named as `previous_response_id`. Admin keys reach every response. Without teams
 * the provider's own keys decide and everything is forwarded as it is.
 */
import { z } from 'zod';
import type { ResponseOwner } from '../chat-log/response-owners.ts';
import type { ProviderConfig } from '../config/config.ts';
import { OdaError } from '../lib/errors.ts';
import { PROVIDER_FORMAT } from '../providers/registry.ts';
import type { AppContext } from './app-context.ts';
import type { Caller } from './auth.ts';

/** What a response id may look like before it goes into an upstream path (`resp_...`). */
export const RESPONSE_ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

/** The 404 of a response the caller may not reach, worded like OpenAI's own. */
export function responseNotFound(id: string, param: string | null = null): OdaError {
  return new OdaError('ODA_ERR_NOT_FOUND', 404, `Response with id '${id}' not found.`, { param });
}

/** True when the gateway, not the provider, decides who reaches a stored response. */
function teamsDecide(app: AppContext, caller: Caller): boolean {
  return !app.passThroughCredentials && !caller.admin;
}

/** True when `caller` may use the response `owner` describes (undefined: never seen by the gateway). */
export function mayUseResponse(app: AppContext, caller: Caller, owner: ResponseOwner | undefined): boolean {
  if (!teamsDecide(app, caller)) return true;
  return owner !== undefined && owner.team !== undefined && owner.team === caller.team;
}

/**
 * The owner of the response id a route names, when the caller may reach it: a malformed id is a
 * 400 naming `param`; with teams, another team's or an unknown id is the 404.
 */
export async function reachableResponse(
  app: AppContext,
  caller: Caller,
  id: string,
  param: string,
): Promise<ResponseOwner | undefined> {
  if (!RESPONSE_ID_RE.test(id)) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      `${param} must be 1-128 of A-Za-z0-9_- (such as resp_abc123)`,
      { param },
    );
  }
  const owner = await app.responseOwners.get(id);
  if (!mayUseResponse(app, caller, owner)) throw responseNotFound(id, param === 'id' ? null : param);
  return owner;
}

const previousShape = z.object({
  previous_response_id: z.string({ error: 'previous_response_id must be a string' }).nullable().optional(),
});

/**
 * For `POST /v1/responses` (and `input_tokens`): the owner of the body's `previous_response_id`,
 * or undefined when the body names none or the gateway never saw it. With teams, a
 * `previous_response_id` of another team or never seen by the gateway is the 404 (admins may use
 * any); a value that is not a string is a 400 naming the field.
 */
export async function checkPreviousResponse(
  app: AppContext,
  body: Record<string, unknown>,
  caller: Caller,
): Promise<ResponseOwner | undefined> {
  // Most bodies name none: nothing to validate, and never a copy of the whole body's members.
  if (body.previous_response_id === undefined) return undefined;
  const parsed = previousShape.safeParse({ previous_response_id: body.previous_response_id });
  if (!parsed.success) {
    throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, parsed.error.issues[0]!.message, {
      param: 'previous_response_id',
    });
  }
  const id = parsed.data.previous_response_id;
  if (id === undefined || id === null) return undefined;
  if (!RESPONSE_ID_RE.test(id)) {
    // Never a response the gateway recorded: with teams the 404, without them the provider's word.
    if (teamsDecide(app, caller)) throw responseNotFound(id, 'previous_response_id');
    return undefined;
  }
  return reachableResponse(app, caller, id, 'previous_response_id');
}

/**
 * The OpenAI-format provider that holds a stored response: the one that served it when the
 * gateway knows (and it is still configured; provider names are compared without case, as the
 * config checks them), else the first OpenAI-format provider.
 */
export function storedResponseProvider(app: AppContext, owner: ResponseOwner | undefined): ProviderConfig {
  const openai = app.registry.all().filter((p) => p.format === PROVIDER_FORMAT.responses);
  const servedBy = owner?.provider.toLowerCase();
  const provider = openai.find((p) => p.name.toLowerCase() === servedBy) ?? openai[0];
  if (!provider) {
    throw new OdaError('ODA_ERR_NO_PROVIDER', 404, 'no configured openai provider holds stored responses');
  }
  return provider;
}

/**
 * The configured OpenAI-format provider that holds what `owner` describes (a response, or an
 * output item of one), when that is another provider than `routesTo`; undefined when it is the same
 * one, or the gateway never recorded the holder, or the holder is no longer configured (provider
 * names are compared without case, as the config checks them).
 */
export function heldElsewhere(
  app: AppContext,
  owner: ResponseOwner | undefined,
  routesTo: string,
): ProviderConfig | undefined {
  if (!owner) return undefined;
  const held = owner.provider.toLowerCase();
  if (held === routesTo.toLowerCase()) return undefined;
  return app.registry
    .all()
    .find((p) => p.format === PROVIDER_FORMAT.responses && p.name.toLowerCase() === held);
}

/**
 * Refuses a `previous_response_id` held by another provider than the one `model` routes to (two
 * OpenAI-format providers): the provider the request would go to cannot continue a response it
 * does not hold, and would only answer that it found none. A 400 naming both, before anything is
 * sent or logged. A response whose provider the gateway never recorded, or that is no longer
 * configured, is left to the provider to judge.
 */
export function checkPreviousProvider(
  app: AppContext,
  owner: ResponseOwner | undefined,
  previousId: unknown,
  model: string,
  routesTo: string,
): void {
  const holder = heldElsewhere(app, owner, routesTo);
  if (!holder) return;
  throw new OdaError(
    'ODA_ERR_INVALID_REQUEST',
    400,
    `previous_response_id '${String(previousId)}' is held by provider "${holder.name}", but model ` +
      `"${model}" routes to provider "${routesTo}", which cannot continue it: use a model ` +
      `"${holder.name}" serves, or send the whole history instead`,
    { param: 'previous_response_id' },
  );
}
