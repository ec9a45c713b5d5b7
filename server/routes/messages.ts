import { Router } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

/** POST /v1/messages (also `?beta=true`): Anthropic Messages, streamed or not. */
export function messagesRoutes(app: AppContext): Router {
  const r = Router();
  r.post(
    '/v1/messages',
    modelCallHandler(app, 'anthropic', { path: '/v1/messages', query: { beta: ['true'] } }),
  );
  return r;
}
