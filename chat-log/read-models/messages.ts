/**
 * Internal read model: the ordered digests of the logged conversation messages (every role: system
 * and developer messages stand where they were sent) with their seq, so the gateway can tell which
 * incoming messages are new and where a history diverges from the log. A compaction drops the
 * messages its summary replaced: the history goes on from the summary-based messages. An answer that
 * never arrived whole (a stream cut short: its response is logged `ok: false` right behind it) stays
 * in the log but leaves this list, so the client's resend of the same history continues the chat
 * instead of reading as a request for another answer (a regeneration's branch).
 */
import { z } from 'zod';
import type { ReadModel } from './read-model.ts';
import {
  echoDigest,
  messageDigest,
  reasoningFreeDigest,
  wireItemId,
  type MessageKey,
} from '../message-digest.ts';
import type { ContentPart } from '../format/current.ts';

const conversationRole = z.enum(['user', 'model', 'tool', 'developer', 'system', 'other']);

export const loggedMessage = z.strictObject({
  seq: z.number().int().nonnegative(),
  role: conversationRole,
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  /** The digest without echo-only wire fields (`echoDigest`), when it differs from `digest`. */
  echo: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /**
   * The digest without its reasoning parts (`reasoningFreeDigest`), when it holds reasoning beside
   * other content: a client that sends the answer back without its reasoning sends this message.
   */
  bare: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** The item id in its wire fields (a Responses output item's), which an `item_reference` names. */
  itemId: z.string().optional(),
  /**
   * When it was logged as a provider's answer (not sent back by a client): a request for this very
   * history that starts after it asks for another answer (a regeneration).
   */
  answeredAt: z.number().int().nonnegative().optional(),
  /**
   * A provider's answer that holds only the model's reasoning (a Responses `reasoning` item): a
   * client may leave it out when it sends the history back, and that is no edit.
   */
  reasoning: z.literal(true).optional(),
  /** The provider's id of the answer this message ends (Responses `resp_...`), when it gave one. */
  responseId: z.string().optional(),
});
export type LoggedMessage = z.infer<typeof loggedMessage>;

const messagesState = z.strictObject({ messages: z.array(loggedMessage) });
export type MessagesState = z.infer<typeof messagesState>;

export const messagesModel: ReadModel<MessagesState> = {
  name: 'messages',
  version: 8,
  internal: true,
  schema: messagesState,
  initial: () => ({ messages: [] }),
  apply(state, event) {
    return messagesModel.applyBatch!(state, [event]);
  },
  applyBatch(state, events) {
    let messages: LoggedMessage[] | undefined;
    for (const event of events) {
      if (event.type === 'compaction') {
        const { fromSeq, toSeq } = event.replaced;
        messages = (messages ?? state.messages).filter((m) => m.seq < fromSeq || m.seq > toSeq);
        continue;
      }
      if (event.type === 'response') {
        const list = messages ?? state.messages;
        const start = answerStart(list, event.seq);
        if (start === list.length) continue;
        if (!event.ok) messages = list.slice(0, start);
        else if (event.responseId !== undefined)
          messages = [...list.slice(0, -1), { ...list.at(-1)!, responseId: event.responseId }];
        continue;
      }
      if (event.type !== 'message') continue;
      const role = conversationRole.safeParse(event.role);
      if (!role.success) continue;
      messages ??= [...state.messages];
      const digest = messageDigest(event);
      const echo = echoDigest(event);
      const itemId = wireItemId(event);
      const bare = reasoningFreeDigest(event);
      messages.push({
        seq: event.seq,
        role: role.data,
        digest,
        ...(echo !== digest && { echo }),
        ...(bare !== undefined && { bare }),
        ...(itemId !== undefined && { itemId }),
        ...(event.source?.kind === 'provider' ? { answeredAt: event.at } : {}),
        ...(event.source?.kind === 'provider' && reasoningOnly(event.content) ? { reasoning: true } : {}),
      });
    }
    return messages ? { messages } : state;
  },
};

/**
 * Where the answer a response event (at `responseSeq`) closes begins in `list`: the provider's
 * messages logged with it sit right before it, seq by seq (`list.length` when there are none, as
 * for a refusal, or an answer the log already held).
 */
function answerStart(list: readonly LoggedMessage[], responseSeq: number): number {
  let n = list.length;
  while (
    n > 0 &&
    list[n - 1]!.answeredAt !== undefined &&
    list[n - 1]!.seq === responseSeq - (list.length - n) - 1
  )
    n--;
  return n;
}

/**
 * Content that is only the model's reasoning: reasoning parts, or the opaque reasoning item a
 * Responses provider returns (kept raw, `type: "reasoning"`, when it carries encrypted content).
 */
function reasoningOnly(content: readonly ContentPart[]): boolean {
  return (
    content.length > 0 &&
    content.every(
      (p) =>
        p.kind === 'reasoning' ||
        (p.kind === 'raw' &&
          typeof p.value === 'object' &&
          p.value !== null &&
          !Array.isArray(p.value) &&
          p.value.type === 'reasoning'),
    )
  );
}

/**
 * How many of the logged messages the answer of response `responseId` ends with (the position a
 * `previous_response_id` continues from), or undefined when no logged answer carries that id.
 */
export function answerEnd(logged: readonly LoggedMessage[], responseId: string): number | undefined {
  for (let i = logged.length - 1; i >= 0; i--) if (logged[i]!.responseId === responseId) return i + 1;
  return undefined;
}

/**
 * A lookup of `logged` by what `recognises` compares, built once: a logged message the incoming one
 * is, or undefined when there is none. Finds one exactly when `recognises` accepts one of them,
 * without walking the list for every incoming message.
 */
export function recogniserOf(
  logged: readonly LoggedMessage[],
): (incoming: MessageKey) => LoggedMessage | undefined {
  const byDigest = new Map<string, LoggedMessage>();
  const byEcho = new Map<string, LoggedMessage>();
  const byItemId = new Map<string, LoggedMessage>();
  const byBareOrDigest = new Map<string, LoggedMessage>();
  const byBare = new Map<string, LoggedMessage>();
  const put = (map: Map<string, LoggedMessage>, key: string | undefined, m: LoggedMessage) => {
    if (key !== undefined && !map.has(key)) map.set(key, m);
  };
  for (const m of logged) {
    put(byDigest, m.digest, m);
    put(byEcho, m.echo ?? m.digest, m);
    put(byItemId, m.itemId, m);
    put(byBareOrDigest, m.bare ?? m.digest, m);
    put(byBare, m.bare, m);
  }
  return (k) =>
    byDigest.get(k.digest) ??
    byEcho.get(k.echo) ??
    (k.refersTo !== undefined ? byItemId.get(k.refersTo) : undefined) ??
    (k.legacy !== undefined ? byDigest.get(k.legacy) : undefined) ??
    (k.bare !== undefined ? byBareOrDigest.get(k.bare) : byBare.get(k.digest));
}

/**
 * True when the incoming message is the logged one: the same digest, the same content without
 * echo-only wire fields (the model's output sent back without its ids, or as plain text), a
 * reference to the logged item by its id, for a message with a file's content the same message as
 * logs written before file parts held content keep it, or the same message with or without the
 * model's reasoning beside its content (clients leave it out when they send an answer back).
 */
export function recognises(logged: LoggedMessage, incoming: MessageKey): boolean {
  return (
    logged.digest === incoming.digest ||
    (logged.echo ?? logged.digest) === incoming.echo ||
    (incoming.refersTo !== undefined && logged.itemId === incoming.refersTo) ||
    (incoming.legacy !== undefined && logged.digest === incoming.legacy) ||
    ((logged.bare !== undefined || incoming.bare !== undefined) &&
      (logged.bare ?? logged.digest) === (incoming.bare ?? incoming.digest))
  );
}
