/**
 * Where a request stands in its client's session (SPEC section 10). Agent clients send many kinds
 * of requests under one session id; the log shows them as their users think of them:
 * - the main conversation is the chat named by the session id;
 * - side requests (session titles, summaries, classifiers, quota probes) go to side chats of the
 *   session, never to the main chat or its branches;
 * - a sub-agent's conversation is a child chat named after its agent id; its side requests (a Codex
 *   sub-agent thread's compaction, inline or through `POST /v1/responses/compact`) go to side chats
 *   of the session whose parent is that chat.
 * The rule reads what each conversation is rooted in: the agent or thread the client names, and the
 * request's shape (a side request offers no tools, carries one message, and asks for structured
 * output or a single token). Only sessions a client identified this way are split: a request that
 * names its chat with `x-session-id` is taken as the caller means it.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestTraits } from '../providers/provider.ts';
import type { SessionIdSource } from './session-id.ts';
import { sha256Hex } from '../lib/sha256.ts';

/**
 * A side request's `agentId`: the sub-agent whose conversation it belongs to (its side chat's
 * parent is that sub-agent's chat, not the main one).
 */
export type ConversationPlace =
  | { kind: 'main' }
  | { kind: 'side'; purpose: string; agentId?: string }
  | { kind: 'subagent'; agentId: string };

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Codex's `x-codex-turn-metadata` (JSON), when it parses. */
export function codexTurnMetadata(headers: IncomingHttpHeaders): Record<string, unknown> | undefined {
  const raw = one(headers, 'x-codex-turn-metadata');
  if (!raw || raw.length > 8192) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Codex request kinds that belong to the main conversation of a thread. */
const CODEX_MAIN_KINDS = new Set(['turn', 'user_turn', 'regular', 'review', 'compact']);

const AGENT_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The place of a request of sub-agent `agentId` (if any) whose side purpose is `purpose` (if any). */
function place(purpose: string | undefined, agentId: string | undefined): ConversationPlace {
  if (purpose !== undefined) return { kind: 'side', purpose, ...(agentId !== undefined ? { agentId } : {}) };
  return agentId !== undefined ? { kind: 'subagent', agentId } : { kind: 'main' };
}

/**
 * Where a request belongs in its session. `side`: the purpose of a side request whatever the
 * request says (a compaction endpoint's calls); the sub-agent it names still owns it, as it owns the
 * side requests its client marks as such.
 */
export function placeInSession(
  source: SessionIdSource['source'] | undefined,
  headers: IncomingHttpHeaders,
  traits: RequestTraits,
  side?: string,
): ConversationPlace {
  if (source !== 'client') return place(side, undefined);
  const agent = one(headers, 'x-claude-code-agent-id');
  if (agent !== undefined && AGENT_ID.test(agent)) return place(side, agent);
  const codex = codexTurnMetadata(headers);
  if (codex) {
    const session = codex.session_id;
    const thread = one(headers, 'thread-id') ?? codex.thread_id;
    // A thread of the session other than its first one is a sub-agent's (Codex spawns agents as threads).
    const agentId =
      typeof thread === 'string' && typeof session === 'string' && thread !== session && AGENT_ID.test(thread)
        ? thread
        : undefined;
    // A side request (a compaction) of a sub-agent's thread is a side request of the sub-agent's chat.
    const kind = codex.request_kind;
    const purpose =
      side ??
      (typeof kind === 'string' && /^[a-z_]{1,32}$/.test(kind) && !CODEX_MAIN_KINDS.has(kind)
        ? kind.replace(/_/g, '-')
        : undefined);
    if (purpose !== undefined || agentId !== undefined) return place(purpose, agentId);
  }
  if (side !== undefined) return place(side, undefined);
  if (traits.tools === 0 && traits.messages <= 1) {
    if (traits.maxTokens !== undefined && traits.maxTokens <= 1) return { kind: 'side', purpose: 'quota' };
    if (traits.structuredOutput) return { kind: 'side', purpose: 'structured' };
  }
  return { kind: 'main' };
}

/**
 * The longest suffix a child chat's id keeps as it is: what is left of 128 characters after the
 * longest team namespace (`t:` + 64 + `:`), so cutting the base for the suffix never cuts into it.
 */
const MAX_SUFFIX = 128 - 67;

/**
 * `base` with `suffix`, cut so the whole stays a chat id (at most 128 characters). The base gives way
 * from its end; a suffix longer than `MAX_SUFFIX` is shortened first to its start and a digest of
 * it, so the base keeps its team's namespace whole (a cut there would log a team's chat outside it,
 * or inside another team's whose name begins with it).
 */
export function childChatId(base: string, suffix: string): string {
  if (base.length + suffix.length <= 128) return `${base}${suffix}`;
  const kept =
    suffix.length <= MAX_SUFFIX
      ? suffix
      : `${suffix.slice(0, MAX_SUFFIX - 17)}-${sha256Hex(suffix).slice(0, 16)}`;
  return `${base.slice(0, 128 - kept.length)}${kept}`;
}

/** The chat a sub-agent's conversation is logged in. */
export function subagentChatId(main: string, agentId: string): string {
  return childChatId(main, `.agent-${agentId}`);
}

/**
 * What the ids of a session's side chats of `purpose` start with: `<main>.side-<purpose>-`, with
 * `main` cut as `childChatId` cuts it for their 12-hex-digit suffix, so a long main id (a long team
 * name) still finds them.
 */
export function sideChatPrefix(main: string, purpose: string): string {
  return childChatId(main, `.side-${purpose}-${'0'.repeat(12)}`).slice(0, -12);
}

/** The chat a side request is logged in: one per purpose and root (system prompt, first message). */
export function sideChatId(main: string, purpose: string, root: readonly (string | undefined)[]): string {
  const h = sha256Hex(JSON.stringify(root)).slice(0, 12);
  return childChatId(main, `.side-${purpose}-${h}`);
}
