import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

export const RESPONSES_PATH = '/v1/responses';

/** POST /v1/responses: the OpenAI Responses API, streamed or not, through the whole corridor. */
export function responsesHandler(app: AppContext): RequestHandler {
  return modelCallHandler(app, 'responses', { path: RESPONSES_PATH });
}

export function responsesRoutes(app: AppContext): Router {
  const r = Router();
  r.post(RESPONSES_PATH, responsesHandler(app));
  return r;
}
