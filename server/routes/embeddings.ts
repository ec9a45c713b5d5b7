/**
 * POST /v1/embeddings: forwarded as sent to the OpenAI-format provider serving the body's model
 * (SPEC section 2). Teams, rate limits, fair share, metrics and logs apply; there is no chat log and
 * no mechanism.
 * @see https://platform.openai.com/docs/api-reference/embeddings/create
 */
import { Router } from 'express';
import { z } from 'zod';
import { OdaError } from '../../lib/errors.ts';
import type { AppContext } from '../app-context.ts';
import { forwardAsIs } from '../forward-as-is.ts';
import { parseJsonBody } from '../json-body.ts';

const embeddingsShape = z.looseObject({
  model: z.string({ error: 'model must be a string' }).min(1, 'model must not be empty'),
});

export function embeddingsRoutes(app: AppContext): Router {
  const r = Router();
  r.post('/v1/embeddings', async (req, res) => {
    const { raw, body } = parseJsonBody(req.body);
    const shape = embeddingsShape.safeParse(body);
    if (!shape.success) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, shape.error.issues[0]!.message, { param: 'model' });
    }
    const model = shape.data.model;
    const provider = app.registry.resolve('openai', model);
    if (!provider) {
      throw new OdaError(
        'ODA_ERR_NO_PROVIDER',
        404,
        `no configured openai provider serves model "${model}"`,
        {
          param: 'model',
        },
      );
    }
    await forwardAsIs(app, req, res, {
      provider: provider.config,
      adapter: provider.adapter,
      method: 'POST',
      routePath: '/v1/embeddings',
      body: raw,
    });
  });
  return r;
}
