import { Router } from 'express';
import { OdaError } from '../../lib/errors.ts';
import { FORMATS } from '../../providers/registry.ts';
import { forwardedQuery } from '../../providers/upstream-url.ts';
import type { AppContext } from '../app-context.ts';
import { forwardAsIs } from '../forward-as-is.ts';
import { parseJsonBody } from '../json-body.ts';

/** POST /v1/messages/count_tokens: forwarded as sent to the Anthropic-format provider for the model. */
export function countTokensRoutes(app: AppContext): Router {
  const r = Router();
  r.post('/v1/messages/count_tokens', async (req, res) => {
    const { raw, body } = parseJsonBody(req.body);
    const model = typeof body.model === 'string' ? body.model : '';
    if (!model)
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'model must be a string', { param: 'model' });
    const provider = app.registry.resolve('anthropic', model);
    if (!provider)
      throw new OdaError(
        'ODA_ERR_NO_PROVIDER',
        404,
        `no configured anthropic provider serves model "${model}"`,
      );
    // Forwarded like every other as-is route: cancelled when the client leaves, timed, logged.
    await forwardAsIs(app, req, res, {
      provider: provider.config,
      adapter: FORMATS.anthropic,
      method: 'POST',
      routePath: '/v1/messages/count_tokens',
      query: forwardedQuery(req.query as Record<string, unknown>, { beta: ['true'] }),
      body: raw,
    });
  });
  return r;
}
