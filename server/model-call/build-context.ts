/**
 * Stage 3 of a model call: the CallContext the pipeline and the repairs work on, from the call and
 * its chat binding.
 */
import type { Turns } from '../../lib/in-turns.ts';
import type { CallContext } from '../../middleware/call-context.ts';
import { imageOrdinals } from '../../middleware/image-set-aside/index.ts';
import type { AppContext } from '../app-context.ts';
import type { ChatBinding } from '../chat-binder.ts';
import { contextWindowFor } from '../model-facts.ts';
import type { ModelCall } from './read-call.ts';

export function buildContext(
  app: AppContext,
  call: ModelCall,
  binding: ChatBinding,
  /** The caller's party's turns, for a large request's pipeline steps. */
  turns?: Turns,
): CallContext {
  const view = call.adapter.createView(call.body, call.shape);
  return {
    ...(turns ? { nextTurn: () => turns.take() } : {}),
    requestId: call.requestId,
    startedAt: call.startedAt,
    config: app.config,
    clock: app.clock,
    adapter: call.adapter,
    providerName: call.provider.config.name,
    model: call.model,
    contextWindow: contextWindowFor(app.config, call.model),
    chatId: binding.chatId,
    raw: call.raw,
    body: call.body,
    // Edits are spliced into the client's bytes, a repeated top-level key included: the layout
    // places each member where its last copy stands, the copy JSON.parse kept and the mechanisms
    // saw, and the providers' parsers keep too.
    ...(call.shape ? { layout: call.shape } : {}),
    view,
    headers: call.headers,
    decisions: binding.decisions,
    lastCacheTouchAt: binding.lastCacheTouchAt,
    imageOrdinals: imageOrdinals(view),
    cacheKeyRefusals: app.cacheKeyRefusals,
    streamUsageRefusals: app.streamUsageRefusals,
    describeImage: (image, key) => binding.describeImage(image, key),
    record: (events) => binding.record(events),
    effects: {
      trimmed: 0,
      trimmedChars: 0,
      imagesSetAside: 0,
      imageRounds: 0,
      pruned: undefined,
      imageReplay: { imagesRemoved: 0, referencesRemoved: 0 },
    },
  };
}
