/**
 * The binding the binder hands the pipeline once a request's history is logged: the chat's recorded
 * decisions and cache clock, the facts of the request's images, and the recording of the gateway's
 * decisions and of the response. Apart from the binder because it runs after the bind, when the
 * answer comes back, and needs only the chat it was bound to.
 */
import type { ChatLog, ChatState } from '../chat-log/chat-log.ts';
import { describeImage, decodeImageSource } from '../chat-log/attachments.ts';
import type { Event, NewEvent } from '../chat-log/format/current.ts';
import { recognises } from '../chat-log/read-models/messages.ts';
import type { Clock } from '../lib/clock.ts';
import { OdaError } from '../lib/errors.ts';
import type { ChatDecisions } from '../middleware/call-context.ts';
import type { BindInput, ChatBinding, ResponseRecord } from './chat-binder.ts';
import { branchConversation, branchId, readBranchSeed, type ParentCache } from './chat-binder-branches.ts';
import { sha256Hex } from '../lib/sha256.ts';

/** A response event as the log holds it. */
export type ResponseEvent = Extract<Event, { type: 'response' }>;

/** Appends of events the binder built itself: not validated against the log's schema again. */
const BUILT = { built: true } as const;

/**
 * The binding of a request logged in `chatId`. `answerAt`: the index, among the chat's messages, of
 * the answer this request will get.
 */
export function chatBinding(
  chatLog: ChatLog,
  clock: Clock,
  attachmentsDir: string,
  chatId: string,
  state: ChatState,
  input: BindInput,
  answerAt: number,
  history: ChatBinding['history'],
  /** For the first request of a branch it just created: the parent's cache clock and window. */
  parent?: ParentCache,
): ChatBinding {
  const d = state.decisions;
  const imageReplayFrom = parent?.imageReplayFrom ?? d.imageReplay?.from;
  const decisions: ChatDecisions = {
    trims: Object.values(d.trims).sort((a, b) => a.seq - b.seq),
    setAside: Object.values(d.setAside).sort((a, b) => a.seq - b.seq),
    projection: d.pruning?.projection ?? [],
    ...(imageReplayFrom !== undefined ? { imageReplayFrom } : {}),
  };
  const touched = [state.cacheClock.lastCacheTouchAt ?? undefined, parent?.lastCacheTouchAt].filter(
    (t) => t !== undefined,
  );
  const record = async (events: NewEvent[]) => {
    try {
      await chatLog.append(chatId, events, undefined, BUILT);
    } catch (e) {
      throw new OdaError(
        'ODA_ERR_LOG_WRITE',
        500,
        `could not record the gateway's decision in the chat log: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
  };
  const team = state.header.team;
  return {
    chatId,
    decisions,
    history,
    lastCacheTouchAt: touched.length > 0 ? Math.max(...touched) : undefined,
    describeImage(image) {
      if (image.source.kind !== 'base64') return {};
      const decoded = decodeImageSource(image.source);
      if (!decoded) return {};
      const facts = describeImage(decoded.bytes);
      if (!facts) return { bytes: decoded.bytes.length };
      const sha = sha256Hex(decoded.bytes);
      return {
        mediaType: facts.mediaType,
        width: facts.width,
        height: facts.height,
        bytes: decoded.bytes.length,
        path: attachmentsDir
          ? chatLog.attachments.forTeam(team).pathFor({ sha256: sha, mediaType: facts.mediaType })
          : undefined,
      };
    },
    record,
    recordResponse(r, again = false) {
      // A try after a failed one: the store may have taken it (Redis gone between running the
      // append and answering); this request's response event after the history says so.
      const sameRequest = (e: ResponseEvent) => e.requestId === input.requestId;
      return recordAnswer(chatLog, clock, chatId, input, answerAt, team, r, again ? sameRequest : undefined);
    },
  };
}

/**
 * A call's answer logged in `chatId` right after the history it answers (message `answerAt`): the
 * model messages and the response event, under the chat's lock; resolves to the chat they went to.
 * `loggedBefore`: recognises, among the response events after that history, one that says this
 * very answer is logged already (a try again after a lost reply: the store may have taken it before
 * its reply was lost; a background answer another retrieve logged); then nothing is appended.
 */
export async function recordAnswer(
  chatLog: ChatLog,
  clock: Clock,
  chatId: string,
  call: { requestId: string; startedAt: number },
  answerAt: number,
  team: string | undefined,
  r: ResponseRecord,
  loggedBefore?: (event: ResponseEvent) => boolean,
): Promise<string> {
  // The answer as the log keeps it: one model message, or one per output item (Responses).
  // A failed answer that never got any content (a stream cut or refused before its first
  // word) leaves no empty model message in the log: its failed response says what happened.
  const answer = r.response
    ? await chatLog.storeImages(
        (r.response.messages ?? [r.response.message]).filter((m) => r.ok || m.content.length > 0),
        team,
      )
    : [];
  const keys = answer.map((m) => chatLog.messageKey(m));
  const response: NewEvent = {
    type: 'response',
    requestId: call.requestId,
    startedAt: call.startedAt,
    status: r.status,
    ok: r.ok,
    ...(r.response?.model ? { model: r.response.model } : {}),
    ...(r.response?.stopReason ? { stopReason: r.response.stopReason } : {}),
    ...(r.response?.usage ? { usage: r.response.usage } : {}),
    ...(r.response?.responseId ? { responseId: r.response.responseId } : {}),
    attempts: r.attempts,
    latencyMs: Math.max(0, Math.round(clock.now() - call.startedAt)),
    ...(r.error ? { error: r.error } : {}),
    ...(r.mechanisms ? { mechanisms: r.mechanisms } : {}),
  };
  const answerEvents = (): NewEvent[] =>
    answer.map((m) => ({
      type: 'message',
      role: m.role,
      content: m.content,
      ...(m.wire ? { wire: m.wire } : {}),
      source: { kind: 'provider' },
    }));
  // The log may hold this very answer already (see `loggedBefore`): a response event it recognises
  // after the history says so, and nothing is appended twice.
  const loggedAlready = async (id: string, state: ChatState) => {
    if (!loggedBefore) return false;
    const from = (state.messages.messages[answerAt - 1]?.seq ?? -1) + 1;
    const events = await chatLog.read(id, from);
    return events.some((e) => e.type === 'response' && loggedBefore(e));
  };
  // Under the chat's lock, like the appends of incoming messages. The answer belongs right
  // after the history it answers (message `answerAt`). If the log already holds this very
  // answer there (a concurrent request's client sent it back), it is not logged twice; if it
  // holds another answer there (two concurrent requests for one history), this one starts a
  // branch, exactly the branch a client continuing with it will be bound to.
  const branch = await chatLog.withChat(chatId, async (latest) => {
    if (await loggedAlready(chatId, latest)) return undefined;
    const logged = latest.messages.messages;
    const there = logged[answerAt];
    if (answer.length && there && !recognises(there, keys[0]!)) {
      const path = [...logged.slice(0, answerAt).map((m) => m.digest), keys[0]!.digest];
      return { id: branchId(chatId, path), seedUntil: there.seq, header: latest.header };
    }
    const events = there ? [] : answerEvents();
    events.push(response);
    await chatLog.append(chatId, events, latest.count, BUILT);
    return undefined;
  });
  if (!branch) return chatId;
  if (!(await chatLog.open(branch.id))) {
    const seed = await readBranchSeed(chatLog, chatId, branch.seedUntil);
    const { version: _v, id: _id, createdAt: _c, seeded: _s, inheritedEvents: _i, ...meta } = branch.header;
    await chatLog.createChat(
      {
        ...meta,
        id: branch.id,
        parent: chatId,
        conversation: branchConversation(branch.header, chatId),
      },
      seed,
    );
  }
  await chatLog.withChat(branch.id, async (latest) => {
    if (await loggedAlready(branch.id, latest)) return;
    const events = latest.messages.messages[answerAt] ? [] : answerEvents();
    events.push(response);
    await chatLog.append(branch.id, events, latest.count, BUILT);
  });
  return branch.id;
}
