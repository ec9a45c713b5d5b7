/**
 * The comparison of a request's history with its chat's log, under the chat's lock: how much the
 * log already holds, where the two diverge (a branch, a regenerated answer, a summary request's side
 * chat, a compaction), and the append of what is new with the request's settings. Apart from the
 * binder, which decides the chat and the verified prefix this starts from.
 */
import type { ChatLog, ChatState, LogMessage, MessageKey } from '../chat-log/chat-log.ts';
import { answerEnd, recognises } from '../chat-log/read-models/messages.ts';
import type { Event, NewEvent, ToolRef } from '../chat-log/format/current.ts';
import type { Turns } from '../lib/in-turns.ts';
import { appendInTurns } from './append-in-turns.ts';
import {
  branchConversation,
  branchId,
  freeRegeneration,
  parentCache,
  pathHash,
  readBranchSeed,
  regenerationWith,
  type ParentCache,
} from './chat-binder-branches.ts';
import { childChatId } from './conversations.ts';
import { compactionOf, isSummaryRequest } from './compaction.ts';

const sameTools = (a: readonly ToolRef[], b: readonly ToolRef[]) =>
  a.length === b.length && a.every((t, i) => t.name === b[i]!.name && t.digest === b[i]!.digest);

async function ensureChat(
  chatLog: ChatLog,
  id: string,
  meta: Record<string, unknown>,
  seed: readonly Event[] = [],
): Promise<void> {
  if (await chatLog.open(id)) return;
  await chatLog.createChat({ id, ...meta }, seed);
}

/**
 * Under the chat's lock: compare the incoming history with the logged one, branch when they
 * diverge, then append what is new and the request's settings.
 */
/**
 * The verified prefix a request was bound after holds more messages than the chat has: the chat's
 * log went away (its file removed, its Redis keys lost) and was created anew since. The binder then
 * binds the request's whole history, so the new log holds all of it.
 */
export class StalePrefix extends Error {
  constructor(chatId: string) {
    super(`the remembered prefix of chat ${chatId} is longer than its log`);
    this.name = 'StalePrefix';
  }
}

export async function appendIncoming(
  chatLog: ChatLog,
  turns: Turns | undefined,
  id: string,
  meta: Record<string, unknown>,
  messages: LogMessage[],
  /** The incoming messages' keys: their digests name branch paths; any of them recognises a message. */
  keys: MessageKey[],
  /** How many logged messages the incoming ones start after (a verified wire prefix). */
  known: number,
  request: Extract<NewEvent, { type: 'request' }>,
  depth = 0,
  /**
   * Set when the provider holds the history and the request sends only what follows it. With the
   * response a `previous_response_id` names: the incoming messages follow its answer, which may
   * stand before the end of the log (a fork from an earlier response branches there); without one
   * (a `conversation`), or when the log does not tell where it is, they follow the whole logged
   * history.
   */
  after?: { responseId?: string | undefined },
  /** When the request started (a regeneration starts after the answer it replaces was logged). */
  startedAt = Number.POSITIVE_INFINITY,
): Promise<{
  chatId: string;
  state: ChatState;
  answerAt: number;
  compacted: boolean;
  /** Set when this request created the branch it is logged in: what its call takes from the parent. */
  parent?: ParentCache;
}> {
  await ensureChat(chatLog, id, meta);
  const outcome = await chatLog.withChat(id, async (state) => {
    const logged = state.messages.messages;
    if (after !== undefined)
      known =
        (after.responseId !== undefined ? answerEnd(logged, after.responseId) : undefined) ?? logged.length;
    else if (known > logged.length) throw new StalePrefix(id);
    // Position in the chat's messages (`known` are shared already) and in the incoming ones.
    let k = known;
    let i = 0;
    while (k < logged.length && i < keys.length) {
      if (recognises(logged[k]!, keys[i]!)) {
        k++;
        i++;
        continue;
      }
      // A client may leave out the model's reasoning when it sends its output back: that is no
      // edit when what follows the reasoning is what the client sent.
      let j = k;
      while (j < logged.length && logged[j]!.reasoning) j++;
      if (j === k || j === logged.length || !recognises(logged[j]!, keys[i]!)) break;
      k = j + 1;
      i++;
    }
    const diverges = k < logged.length && i < keys.length;
    // A history rebuilt from the chat's own summary continues the chat (SPEC section 10).
    const session = state.header.conversation?.session ?? id;
    const compaction = diverges
      ? await compactionOf(chatLog, id, session, logged, k, messages, keys, i)
      : undefined;
    // The summary is of a branch of this chat's: the compacted history continues that branch.
    if (compaction && 'in' in compaction && depth < 8) return { summarised: compaction.in };
    const replaced = compaction && 'fromSeq' in compaction ? compaction : undefined;
    // A summary request (see `isSummaryRequest`) diverges where the log has a model answer, or
    // adds nothing but its instruction.
    const asksSummary = diverges || (k === logged.length && i === keys.length - 1);
    if (asksSummary && !replaced && depth < 8 && isSummaryRequest(logged, k, messages, i)) {
      // A summary request (compaction) is a side request of the session. Its side chat holds
      // what it adds (the instruction) and the summary, not a second copy of the history it
      // summarises (that stays in this chat, messages 0..k-1), and names this chat as its parent:
      // the compacted history built from its answer continues this chat.
      const prefix = logged.slice(0, k).map((m) => m.digest);
      return {
        side: {
          id: childChatId(session, `.side-summary-${pathHash([...prefix, keys[i]!.digest])}`),
          from: i,
          header: state.header,
          session,
        },
      };
    }
    if (diverges && !replaced && depth < 8) {
      // Seed the branch with every event before the first logged message it does not share, and
      // the decisions recorded later about the messages it does share.
      const seedUntil = logged[k]!.seq;
      const prefix = logged.slice(0, k).map((m) => m.digest);
      // A continuation of a regenerated answer goes on in the branch that answer was logged in.
      const regenerated =
        logged[k]!.role === 'model' ? await regenerationWith(chatLog, id, prefix, keys[i]!) : undefined;
      const path = [...prefix, keys[i]!.digest];
      return {
        branch: {
          id: regenerated ?? branchId(id, path),
          seedUntil,
          header: state.header,
          cache: parentCache(state),
        },
      };
    }
    // Only a request that started after that answer was logged: concurrent requests for one
    // history (an agent's parallel calls, a burst) all belong to the chat itself.
    const answeredAt = logged[k]?.answeredAt;
    if (!diverges && i === keys.length && answeredAt !== undefined && startedAt > answeredAt && depth < 8) {
      // The log already answered this very history: the client asks for another answer. The
      // exchange goes to a branch chosen now, so the answer's x-session-id (sent before a stream's
      // first byte) names the chat it is logged in (SPEC section 2).
      const prefix = logged.slice(0, k).map((m) => m.digest);
      return {
        branch: {
          id: await freeRegeneration(chatLog, id, prefix),
          seedUntil: logged[k]!.seq,
          header: state.header,
          cache: parentCache(state),
        },
      };
    }
    const fresh = messages.slice(i);
    const events: NewEvent[] = [];
    if (replaced) {
      events.push({ type: 'compaction', requestId: request.requestId, replaced, messages: fresh.length });
    }
    for (const m of fresh) {
      events.push({
        type: 'message',
        role: m.role,
        content: m.content,
        ...(m.wire ? { wire: m.wire } : {}),
        source: { kind: 'client' },
      });
    }
    const tools = request.tools;
    const lastTools = state.tools.last;
    if (lastTools && !sameTools(lastTools.tools, tools)) {
      const before = new Map(lastTools.tools.map((t) => [t.name, t.digest]));
      const now = new Map(tools.map((t) => [t.name, t.digest]));
      events.push({
        type: 'tools-changed',
        added: tools
          .filter((t) => before.get(t.name) !== t.digest)
          .map((tool) => ({ tool, extends: lastTools.seq })),
        removed: lastTools.tools.filter((t) => now.get(t.name) !== t.digest),
      });
    }
    events.push(request);
    await appendInTurns(chatLog, id, events, state.count, turns);
    // Messages, a tools change and a request event move neither the decisions nor the cache
    // clock, so the state read under the lock is still the one the pipeline needs.
    return { state, answerAt: k + fresh.length, compacted: replaced !== undefined };
  });
  if (outcome.state) {
    const { state, answerAt, compacted } = outcome;
    return { chatId: id, state, answerAt, compacted };
  }
  if (outcome.summarised !== undefined) {
    return appendIncoming(
      chatLog,
      turns,
      outcome.summarised,
      meta,
      messages,
      keys,
      0,
      request,
      depth + 1,
      undefined,
      startedAt,
    );
  }
  if (outcome.side) {
    const { id: sideId, from, header: parentHeader, session } = outcome.side;
    if (!(await chatLog.open(sideId))) {
      await chatLog.createChat({
        id: sideId,
        ...meta,
        team: parentHeader.team,
        parent: id,
        conversation: { kind: 'side', session, purpose: 'summary' },
      });
    }
    return appendIncoming(
      chatLog,
      turns,
      sideId,
      meta,
      messages.slice(from),
      keys.slice(from),
      0,
      request,
      depth + 1,
      undefined,
      startedAt,
    );
  }
  const { id: childId, seedUntil, header: parentHeader, cache } = outcome.branch!;
  let created = false;
  if (!(await chatLog.open(childId))) {
    const seed = await readBranchSeed(chatLog, id, seedUntil);
    const { status } = await chatLog.createChat(
      {
        id: childId,
        ...meta,
        team: parentHeader.team,
        parent: id,
        conversation: branchConversation(parentHeader, id),
      },
      seed,
    );
    created = status === 'created';
  }
  const bound = await appendIncoming(
    chatLog,
    turns,
    childId,
    meta,
    messages,
    keys,
    known,
    request,
    depth + 1,
    undefined,
    startedAt,
  );
  // Diverging from the new branch too, the call is bound to a branch of it, which inherits from it.
  return created && !bound.parent ? { ...bound, parent: cache } : bound;
}
