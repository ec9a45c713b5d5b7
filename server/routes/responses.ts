import { Router } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

/** POST /v1/responses: the OpenAI Responses API, streamed or not, through the whole corridor. */
export function responsesRoutes(app: AppContext): Router {
  const r = Router();
  r.post('/v1/responses', modelCallHandler(app, 'responses', { path: '/v1/responses' }));
  return r;
}
