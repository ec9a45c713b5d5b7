/**
 * Tells a compacted history from an edited one (SPEC section 10). Agent clients compact a long
 * conversation by asking the model for a summary, then go on with a history that starts from that
 * summary (Claude Code's `/compact`, Codex's compaction). Such a history diverges from the log,
 * like an edit would: at its start (Claude Code), or after the initial context and the user's
 * earlier messages, which Codex keeps before the summary. It is a compaction when a new message
 * from the point of divergence on carries the summary (see `compactionOf`): the chat's last model
 * answer, or the answer of one of the session's latest summary requests (Claude Code's, or Codex's
 * `compaction` request), which went to a side chat, in text or as the provider's opaque item. The
 * chat then goes on, with the compaction recorded, instead of branching into a copy of its own
 * history.
 */
import type { ChatLog, LogMessage } from '../chat-log/chat-log.ts';
import type { Header } from '../chat-log/format/current.ts';
import { recogniserOf, recognises, type LoggedMessage } from '../chat-log/read-models/messages.ts';
import type { MessageKey } from '../chat-log/message-digest.ts';
import { sideChatPrefix } from './conversations.ts';

/** Lines shorter than this say too little to recognise a summary by. */
const MIN_LINE = 40;
/** How many of the summary's lines the new history must carry (all of them when it has fewer). */
const LINES_NEEDED = 3;

function textOf(content: LogMessage['content']): string {
  return content.map((p) => (p.kind === 'text' || p.kind === 'reasoning' ? p.text : '')).join('\n');
}

/** True when `text` carries enough of `summary`'s lines to have been built from it. */
export function carriesSummary(text: string, summary: string): boolean {
  const lines = summary
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= MIN_LINE);
  if (lines.length === 0) return false;
  let found = 0;
  for (const line of lines) {
    if (text.includes(line) && ++found >= LINES_NEEDED) return true;
  }
  return found === lines.length;
}

/** The text of chat `chatId`'s last model message among `logged` from index `from` on. */
async function lastModelText(
  chatLog: ChatLog,
  chatId: string,
  logged: readonly LoggedMessage[],
  from = 0,
): Promise<string | undefined> {
  for (let i = logged.length - 1; i >= from; i--) {
    if (logged[i]!.role !== 'model') continue;
    const [event] = await chatLog.read(chatId, logged[i]!.seq, 1);
    return event?.type === 'message' ? textOf(event.content) : undefined;
  }
  return undefined;
}

/** The chats a session's summary requests go to (see `isSummaryRequest`). */
export function summaryChatPrefix(session: string): string {
  return sideChatPrefix(session, 'summary');
}

/** The side chats a session's compaction requests go to (Codex's `request_kind: compaction`). */
function compactionChatPrefix(session: string): string {
  return sideChatPrefix(session, 'compaction');
}

/**
 * A session's summaries looked at for a compacted history: the answers of its latest summary (or
 * compaction) requests. Several, because the conversations of one session compact on their own:
 * sub-agents running beside the main conversation may ask for theirs after the main one asked.
 */
const RECENT_SUMMARIES = 8;

/** A side chat's answer, with its text and the chat the side request came from (its parent). */
interface SideAnswer {
  message: LoggedMessage;
  text: string | undefined;
  parent: string | undefined;
}

/**
 * The answers the session's latest side chats under `prefix` end with, newest first: each its last
 * message, when the provider gave it (a side request that failed ends with the history it sent,
 * which is no summary).
 */
async function* recentSideAnswers(chatLog: ChatLog, prefix: string): AsyncGenerator<SideAnswer> {
  const { chats } = await chatLog.listPage({ limit: RECENT_SUMMARIES, idPrefix: prefix });
  for (const chat of chats) {
    const side = await chatLog.open(chat.id);
    const logged = side?.messages.messages ?? [];
    const last = logged.at(-1);
    if (!side || !last || last.role !== 'model' || last.answeredAt === undefined) continue;
    yield {
      message: last,
      text: await lastModelText(chatLog, chat.id, logged, logged.length - 1),
      parent: await sideParent(chatLog, side.header),
    };
  }
}

/** Branches nest at most this deep for `branchOf` and `sideParent` to find them. */
const MAX_BRANCH_DEPTH = 16;

/**
 * The chat a side request came from: its side chat's parent, or, for a branch of a side chat (a
 * later summary request of the same root, with another history), the parent of the side chat it
 * branches from.
 */
async function sideParent(chatLog: ChatLog, header: Header): Promise<string | undefined> {
  let h: Header | undefined = header;
  for (let n = 0; n < MAX_BRANCH_DEPTH && h?.conversation?.kind === 'branch' && h.parent; n++)
    h = await chatLog.header(h.parent);
  return h?.conversation?.kind === 'side' ? h.parent : undefined;
}

/** True when chat `id` is a branch of `chatId`, or a branch of one of its branches. */
async function branchOf(chatLog: ChatLog, id: string, chatId: string): Promise<boolean> {
  for (let n = 0; n < MAX_BRANCH_DEPTH; n++) {
    const header = await chatLog.header(id);
    if (!header?.parent || header.conversation?.kind !== 'branch') return false;
    if (header.parent === chatId) return true;
    id = header.parent;
  }
  return false;
}

/** A compaction found in a history: what the summary replaced, or the chat whose conversation it summarised. */
export type Compaction = { fromSeq: number; toSeq: number } | { in: string };

/**
 * When the incoming history diverges from the logged one at `k` (the incoming message `at`) and is
 * built from a summary, the seq range of the messages the summary replaced; otherwise undefined.
 * A summary request's side chat names the chat it summarised as its parent: when that is a branch
 * of this chat (the user rewound the conversation before compacting it), the compacted history
 * continues there (`in`), where the conversation it summarises is logged.
 * Where the summary can be: in the messages from the divergence on that the log does not hold from
 * `k` on, up to the first logged model answer the history sends again (Claude Code resends the
 * newest messages after its summary; what follows a resent answer is an edited continuation, not a
 * rebuilt history). Built from a summary: such a user message carries the text of the chat's last
 * model answer, or of the answer of one of the session's latest summary or compaction requests (side
 * chats); or such a message is that answer itself, sent back as the provider gave it (a Responses
 * `compaction` item: Codex's remote compaction on OpenAI, whose summary is opaque).
 */
export async function compactionOf(
  chatLog: ChatLog,
  chatId: string,
  session: string,
  logged: readonly LoggedMessage[],
  k: number,
  incoming: readonly LogMessage[],
  keys: readonly MessageKey[],
  at: number,
): Promise<Compaction | undefined> {
  if (k >= logged.length) return undefined;
  const inLog = recogniserOf(logged.slice(k));
  const candidates: number[] = [];
  for (let i = at; i < keys.length; i++) {
    const known = inLog(keys[i]!);
    if (known?.role === 'model') break;
    if (!known) candidates.push(i);
  }
  if (candidates.length === 0) return undefined;
  const texts: string[] = [];
  for (const i of candidates) {
    const m = incoming[i]!;
    if (m.role !== 'user') continue;
    const text = textOf(m.content);
    if (text.length >= MIN_LINE) texts.push(text);
  }
  const carried = (summary: string | undefined): boolean =>
    summary !== undefined && texts.some((t) => carriesSummary(t, summary));
  const replaced = { fromSeq: logged[k]!.seq, toSeq: logged[logged.length - 1]!.seq };
  if (texts.length > 0 && carried(await lastModelText(chatLog, chatId, logged, k))) return replaced;
  for (const prefix of [summaryChatPrefix(session), compactionChatPrefix(session)]) {
    for await (const answer of recentSideAnswers(chatLog, prefix)) {
      const found = carried(answer.text) || candidates.some((i) => recognises(answer.message, keys[i]!));
      if (!found) continue;
      // The summary of this chat's conversation (a side chat logged before summaries named the
      // chat they summarise names the session), or of a branch of it; not another conversation's.
      const summarised = answer.parent;
      if (summarised === undefined || summarised === chatId || summarised === session) return replaced;
      if (await branchOf(chatLog, summarised, chatId)) return { in: summarised };
    }
  }
  return undefined;
}

/**
 * True when the request asks for a summary of the chat (Claude Code's `/compact`), as its last
 * message, a new user message asking for a summary, after either
 * - the logged history with the newest messages left out (where the log has a model answer at `k`,
 *   the request ends instead): the instruction Claude Code appends beside the last tool result; or
 * - the whole logged history, which ends with a model answer (`k` is the log's length): the
 *   instruction Claude Code sends as a message of its own after a plain answer. Only Claude Code's
 *   own words count here, as a user asking in a chat for a summary of it is no side request.
 */
export function isSummaryRequest(
  logged: readonly LoggedMessage[],
  k: number,
  incoming: readonly LogMessage[],
  at: number,
): boolean {
  const message = incoming[at];
  if (message === undefined || at !== incoming.length - 1 || message.role !== 'user' || k < 1) return false;
  const text = textOf(message.content);
  if (k < logged.length) return logged[k]!.role === 'model' && SUMMARY_ASK.test(text);
  return k === logged.length && logged[k - 1]!.role === 'model' && COMPACT_INSTRUCTION.test(text);
}

/** What a summary request asks for, in its own words. */
const SUMMARY_ASK = /\bsummar(y|ise|ize)\b/i;

/** Claude Code's compaction instruction. */
const COMPACT_INSTRUCTION =
  /^\s*CRITICAL: Respond with TEXT ONLY\b[\s\S]*\bsummary of the conversation so far\b/;
