import { Router, type RequestHandler } from 'express';
import type { AppContext } from '../app-context.ts';
import { modelCallHandler } from '../model-call/index.ts';

export const RESPONSES_PATH = '/v1/responses';
export const RESPONSES_COMPACT_PATH = '/v1/responses/compact';

/** POST /v1/responses: the OpenAI Responses API, streamed or not, through the whole corridor. */
export function responsesHandler(app: AppContext): RequestHandler {
  return modelCallHandler(app, 'responses', { path: RESPONSES_PATH });
}

/**
 * POST /v1/responses/compact: the Responses API's compaction (`client.responses.compact`), a model
 * call answered with the user messages and one opaque `compaction` item. Through the same corridor
 * as `POST /v1/responses`, logged as the session's compaction side request (a sub-agent's, when the
 * client names one): a next turn that sends its output back continues the chat it compacted (the
 * main chat, or the sub-agent's) with the compaction recorded (SPEC section 10).
 */
export function responsesCompactHandler(app: AppContext): RequestHandler {
  return modelCallHandler(app, 'responses', { path: RESPONSES_COMPACT_PATH, side: 'compaction' });
}

export function responsesRoutes(app: AppContext): Router {
  const r = Router();
  r.post(RESPONSES_PATH, responsesHandler(app));
  r.post(RESPONSES_COMPACT_PATH, responsesCompactHandler(app));
  return r;
}
