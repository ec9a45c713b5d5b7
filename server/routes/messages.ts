import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

export const MESSAGES_PATH = '/v1/messages';

/** POST /v1/messages (also `?beta=true`): Anthropic Messages, streamed or not. */
export function messagesHandler(app: AppContext): RequestHandler {
  return modelCallHandler(app, 'anthropic', { path: MESSAGES_PATH, query: { beta: ['true'] } });
}

export function messagesRoutes(app: AppContext): Router {
  const r = Router();
  r.post(MESSAGES_PATH, messagesHandler(app));
  return r;
}
