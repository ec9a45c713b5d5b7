/**
 * One model call, from the client's body to the client's answer, as six named stages:
 *
 *   readCall ▸ bindChat ▸ buildContext ▸ runPipeline ▸ forward ▸ respond
 *
 * Every format-specific part sits behind the FormatAdapter, so a new wire format adds an adapter
 * and a route, not branches here.
 */
import type { Request, Response } from 'express';
import type { Turns } from '../../lib/in-turns.ts';
import { runPipeline } from '../../middleware/pipeline.ts';
import type { WireFormat } from '../../providers/provider.ts';
import type { AppContext } from '../app-context.ts';
import type { ChatBinding } from '../chat-binder.ts';
import { heldAtShutdown } from '../drain.ts';
import { holdCallSlot } from '../fair-share.ts';
import { checkPreviousProvider, checkPreviousResponse } from '../response-access.ts';
import { checkStoredReferences } from '../response-references.ts';
import { conversationSessionId } from '../session-id.ts';
import { scopedChatId } from '../team-scope.ts';
import { buildContext } from './build-context.ts';
import { forward, type ForwardProgress } from './forward.ts';
import { readCall, type ModelCall, type ModelRoute } from './read-call.ts';
import { respond, respondToFailure } from './respond.ts';

export type { ModelRoute };

/**
 * From this body size on, the pipeline and the forward each wait for their turn of the event loop
 * (about where a request's pipeline starts to take milliseconds).
 */
export const HEAVY_BODY_BYTES = 256 * 1024;

/** Handles the model routes: chat completions (openai), messages (anthropic), responses and its compact. */
export function modelCallHandler(app: AppContext, format: WireFormat, route: ModelRoute) {
  // At shutdown the chat log closes only once every call has logged its answer, also a call whose
  // connection the grace period already closed.
  return heldAtShutdown(app.drain, async function modelCall(req: Request, res: Response): Promise<void> {
    // The call's fair-share slot stays taken until its work is over, even if its client leaves.
    const slot = holdCallSlot(res);
    try {
      await runCall(app, req, res, format, route);
    } finally {
      slot();
    }
  });
}

/** The stages of one call, in order. */
async function runCall(
  app: AppContext,
  req: Request,
  res: Response,
  format: WireFormat,
  route: ModelRoute,
): Promise<void> {
  const call = readCall(app, req, res, format, route);
  // A large request's heavy stages take turns with other large requests' (SPEC section 14), round
  // robin between teams; a small one's stages take less time than a turn of the event loop costs,
  // so they run on and never wait behind large requests.
  const turns = call.raw.length >= HEAVY_BODY_BYTES ? app.turns.for(call.caller.team) : undefined;
  // The binding's first stretch (the session id, the whole body normalized) runs in one go.
  if (turns) await turns.take();
  const binding = await bindChat(app, call, res, turns);
  const ctx = buildContext(app, call, binding, turns);
  if (turns) await turns.take();
  await runPipeline(ctx);
  const progress: ForwardProgress = { attempts: 0, retries: 0 };
  let result;
  try {
    if (turns) await turns.take();
    result = await forward(app, call, ctx, progress);
  } catch (e) {
    return respondToFailure(app, call, ctx, binding, res, e, progress);
  }
  await respond(app, call, ctx, binding, res, result);
}

/** Stage 2: finds (or creates, or branches) the chat and appends what the client sent. */
async function bindChat(
  app: AppContext,
  call: ModelCall,
  res: Response,
  turns: Turns | undefined,
): Promise<ChatBinding> {
  // `previous_response_id` continues the chat that logged that response (404 for another team's).
  const previous = await checkPreviousResponse(app, call.body, call.caller);
  checkPreviousProvider(app, previous, call.body.previous_response_id, call.model, call.provider.config.name);
  // So do a `conversation` and `item_reference`s, which name stored state as well.
  if (call.adapter.storesResponses) {
    await checkStoredReferences(app, call.body, call.caller, {
      model: call.model,
      provider: call.provider.config.name,
    });
  }
  // A `conversation` (refused with teams above) continues the chat named after it, at its end.
  const conversation = call.adapter.storesResponses ? conversationSessionId(call.body) : undefined;
  const binding = await app.chats.bind({
    ...(previous
      ? { continues: { chatId: previous.chatId, responseId: String(call.body.previous_response_id) } }
      : conversation
        ? { continues: { chatId: scopedChatId(conversation, call.caller) } }
        : {}),
    ...(call.route.side !== undefined ? { side: call.route.side } : {}),
    requestId: call.requestId,
    startedAt: call.startedAt,
    adapter: call.adapter,
    providerName: call.provider.config.name,
    body: call.body,
    raw: call.raw,
    ...(call.shape?.list ? { wireRanges: call.shape.list } : {}),
    ...(call.shape?.tools ? { toolsRange: call.shape.tools } : {}),
    headers: call.headers,
    caller: call.caller,
    ...(turns ? { turns } : {}),
  });
  res.setHeader('x-session-id', binding.chatId);
  call.setLogField('chatId', binding.chatId);
  app.metrics.historyMessages.inc({ how: 'recognised' }, binding.history.recognised);
  app.metrics.historyMessages.inc({ how: 'compared' }, binding.history.compared);
  return binding;
}
