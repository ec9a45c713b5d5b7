/**
 * GET /v1/models and GET /v1/models/{id} (SPEC section 2): the real model ids the providers serve
 * (see model-catalog.ts), in the caller's shape: Anthropic's when the request carries
 * `anthropic-version` (paged by `limit`, `after_id`, `before_id` as Anthropic pages it), else
 * OpenAI's. A model the gateway does not serve is a 404 in the same shape.
 */
import { Router, type Request } from 'express';
import { z } from 'zod';
import { OdaError } from '../../lib/errors.ts';
import {
  ANTHROPIC_MAX_PAGE,
  renderModel,
  renderModelList,
  type ModelListShape,
} from '../../providers/model-list.ts';
import type { AppContext } from '../app-context.ts';
import { ModelCatalog } from '../model-catalog.ts';

/** The caller's shape, as the error handler also reads it for `/v1/models`. */
function shapeOf(req: Request): ModelListShape {
  return req.headers['anthropic-version'] !== undefined ? 'anthropic' : 'openai';
}

const pageQuery = z.object({
  limit: z.coerce
    .number({ error: 'limit must be a whole number' })
    .int('limit must be a whole number')
    .min(1, 'limit must be at least 1')
    .max(ANTHROPIC_MAX_PAGE, `limit must be at most ${ANTHROPIC_MAX_PAGE}`)
    .optional(),
  after_id: z.string({ error: 'after_id must be given once' }).optional(),
  before_id: z.string({ error: 'before_id must be given once' }).optional(),
});

export function modelsRoutes(app: AppContext): Router {
  const r = Router();
  const catalog = new ModelCatalog(app);
  r.get('/v1/models', async (req, res) => {
    const shape = shapeOf(req);
    const models = await catalog.list(req.headers);
    if (shape === 'openai') {
      res.json(renderModelList(shape, models));
      return;
    }
    const page = pageQuery.safeParse(req.query);
    if (!page.success) {
      const issue = page.error.issues[0]!;
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, issue.message, {
        param: issue.path.join('.') || null,
      });
    }
    const { limit, after_id: afterId, before_id: beforeId } = page.data;
    res.json(renderModelList(shape, models, { limit, afterId, beforeId }));
  });
  // Model ids may hold slashes (`meta-llama/Llama-3.1-8B`): the id is the rest of the path.
  r.get('/v1/models/*id', async (req, res) => {
    const id = ([] as string[]).concat(req.params.id as string | string[]).join('/');
    const found = (await catalog.list(req.headers)).find((m) => m.model.id === id);
    if (!found) {
      throw new OdaError('ODA_ERR_NOT_FOUND', 404, `model '${id}' is not served by this gateway`, {
        param: 'model',
      });
    }
    res.json(renderModel(shapeOf(req), found.model, found.owner));
  });
  return r;
}
