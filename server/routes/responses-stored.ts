/**
 * The Responses API routes forwarded as they are (SPEC sections 2 and 9): a stored response
 * (`GET`/`DELETE /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`,
 * `GET /v1/responses/{id}/input_items`) goes to the provider that served it when the gateway knows,
 * else to the first OpenAI-format provider; with teams only the team that created it (and admins)
 * reach it. `POST /v1/responses/input_tokens` goes to the provider serving the body's model.
 * @see https://platform.openai.com/docs/api-reference/responses/get
 * @see https://platform.openai.com/docs/api-reference/responses/input-items
 */
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { OdaError } from '../../lib/errors.ts';
import { FORMATS } from '../../providers/registry.ts';
import type { AppContext } from '../app-context.ts';
import { forwardAsIs, queryOf, queryValues, type QueryParam } from '../forward-as-is.ts';
import { parseJsonBody } from '../json-body.ts';
import {
  checkPreviousProvider,
  checkPreviousResponse,
  reachableResponse,
  storedResponseProvider,
} from '../response-access.ts';
import { checkStoredReferences } from '../response-references.ts';
import { callerOf } from '../visible-chat.ts';
import { backgroundStreamObserver, recordBackgroundAnswer } from '../background-answers.ts';
import { heldAtShutdown } from '../drain.ts';

const include: Record<string, QueryParam> = {
  include: { value: queryValues.name, list: true },
  'include[]': { value: queryValues.name, list: true },
};

/** What each stored-response route forwards of the client's query; nothing else goes upstream. */
const RETRIEVE_QUERY: Record<string, QueryParam> = {
  ...include,
  include_obfuscation: { value: queryValues.flag },
  starting_after: { value: queryValues.count },
  stream: { value: queryValues.flag },
};
const INPUT_ITEMS_QUERY: Record<string, QueryParam> = {
  ...include,
  after: { value: queryValues.id },
  before: { value: queryValues.id },
  limit: { value: queryValues.count },
  order: { value: queryValues.order },
};

const inputTokensShape = z.looseObject({
  model: z.string({ error: 'model must be a string' }).min(1, 'model must not be empty').nullish(),
});

export function storedResponsesRoutes(app: AppContext): Router {
  const r = Router();
  const adapter = FORMATS.responses;

  /** Forwards one stored-response call once the caller may reach the id. */
  function stored(
    method: 'GET' | 'POST' | 'DELETE',
    suffix: '' | '/cancel' | '/input_items',
    query: Record<string, QueryParam>,
  ) {
    return async (req: Request, res: Response) => {
      const id = String(req.params.id);
      const owner = await reachableResponse(app, callerOf(res), id, 'id');
      const provider = storedResponseProvider(app, owner);
      const retrieve = method === 'GET' && suffix === '';
      await forwardAsIs(app, req, res, {
        provider,
        adapter,
        method,
        routePath: `/v1/responses/${id}${suffix}`,
        query: queryOf(req.query as Record<string, unknown>, query),
        // A background response's answer is logged when it is first retrieved finished, as JSON
        // or streamed.
        ...(retrieve && owner
          ? {
              observeJson: (text: string) =>
                recordBackgroundAnswer(app, owner, provider, text, res.locals.requestId),
              observeEvents: backgroundStreamObserver(app, owner, provider, res.locals.requestId),
            }
          : {}),
      });
    };
  }

  r.post('/v1/responses/input_tokens', async (req, res) => {
    const { raw, body } = parseJsonBody(req.body);
    const shape = inputTokensShape.safeParse(body);
    if (!shape.success) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, shape.error.issues[0]!.message, { param: 'model' });
    }
    const owner = await checkPreviousResponse(app, body, callerOf(res));
    const model = shape.data.model;
    let provider;
    if (model) {
      provider = app.registry.resolve('responses', model)?.config;
      if (!provider) {
        throw new OdaError(
          'ODA_ERR_NO_PROVIDER',
          404,
          `no configured responses provider serves model "${model}"`,
          {
            param: 'model',
          },
        );
      }
      checkPreviousProvider(app, owner, body.previous_response_id, model, provider.name);
    } else {
      // No model: the provider holding the previous response, else the first OpenAI-format one.
      provider = storedResponseProvider(app, owner);
    }
    await checkStoredReferences(
      app,
      body,
      callerOf(res),
      model ? { model, provider: provider.name } : undefined,
    );
    await forwardAsIs(app, req, res, {
      provider,
      adapter,
      method: 'POST',
      routePath: '/v1/responses/input_tokens',
      body: raw,
    });
  });
  // A retrieve may log a background answer: the chat log closes only after it at shutdown.
  r.get('/v1/responses/:id', heldAtShutdown(app.drain, stored('GET', '', RETRIEVE_QUERY)));
  r.delete('/v1/responses/:id', stored('DELETE', '', {}));
  r.post('/v1/responses/:id/cancel', stored('POST', '/cancel', {}));
  r.get('/v1/responses/:id/input_items', stored('GET', '/input_items', INPUT_ITEMS_QUERY));
  return r;
}
