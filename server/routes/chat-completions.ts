import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

export const CHAT_COMPLETIONS_PATH = '/v1/chat/completions';

/** POST /v1/chat/completions: OpenAI Chat Completions, streamed or not. */
export function chatCompletionsHandler(app: AppContext): RequestHandler {
  return modelCallHandler(app, 'openai', { path: CHAT_COMPLETIONS_PATH });
}

export function chatCompletionsRoutes(app: AppContext): Router {
  const r = Router();
  r.post(CHAT_COMPLETIONS_PATH, chatCompletionsHandler(app));
  return r;
}
