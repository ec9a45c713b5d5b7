import { Router } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

/** POST /v1/chat/completions: OpenAI Chat Completions, streamed or not. */
export function chatCompletionsRoutes(app: AppContext): Router {
  const r = Router();
  r.post('/v1/chat/completions', modelCallHandler(app, 'openai', { path: '/v1/chat/completions' }));
  return r;
}
