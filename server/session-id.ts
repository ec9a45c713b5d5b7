/**
 * Which chat a request belongs to (SPEC section 2). The explicit `x-session-id` wins; otherwise the
 * conversation ids popular agent clients already send, namespaced by their source; otherwise a
 * stable id derived from the caller, the format, the system prompt and the first user message. A
 * Responses `conversation` names its chat like a `previous_response_id` does (`conversationSessionId`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { OdaError } from '../lib/errors.ts';
import { isChatId } from '../chat-log/chat-id.ts';
import { codexTurnMetadata } from './conversations.ts';
import { sha256Hex } from '../lib/sha256.ts';

export interface SessionIdSource {
  id: string;
  source: 'header' | 'client' | 'derived';
}

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Client-sent conversation ids, first found wins: [header or source, namespace]. */
const CLIENT_HEADERS: ReadonlyArray<[string, string]> = [
  ['x-claude-code-session-id', 'claude-code'],
  ['session-id', 'session'],
  ['session_id', 'session'],
  // Older Codex releases name the conversation too; current ones say it in x-codex-turn-metadata.
  ['conversation_id', 'session'],
  ['x-opencode-session', 'opencode'],
  ['x-session-affinity', 'affinity'],
];

/**
 * `raw` under its source's namespace, when that makes a chat id. An empty id names no
 * conversation (a client that sends `prompt_cache_key: ""` or an empty header for every
 * conversation would otherwise put them all in one chat, each a branch of the first): ignored, like
 * any malformed one.
 */
function namespaced(ns: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  const id = `${ns}:${raw}`;
  return isChatId(id) ? id : undefined;
}

/** The `session_id` inside Anthropic `metadata.user_id` when that is JSON. */
function metadataSessionId(body: Record<string, unknown>): string | undefined {
  const meta = body.metadata;
  if (!meta || typeof meta !== 'object') return undefined;
  const userId = (meta as { user_id?: unknown }).user_id;
  if (typeof userId !== 'string' || !userId.trim().startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(userId) as { session_id?: unknown };
    return typeof parsed.session_id === 'string' ? parsed.session_id : undefined;
  } catch {
    return undefined;
  }
}

/** The `session_id` inside Codex's `x-codex-turn-metadata` (JSON), when it parses. */
function codexSessionId(headers: IncomingHttpHeaders): string | undefined {
  const id = codexTurnMetadata(headers)?.session_id;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Finds the chat id a request names. Throws a 400 for a malformed explicit `x-session-id`;
 * malformed ids from other sources are ignored. Returns undefined when a derived id is needed.
 */
export function requestedSessionId(
  headers: IncomingHttpHeaders,
  body: Record<string, unknown>,
): SessionIdSource | undefined {
  const explicit = one(headers, 'x-session-id');
  if (explicit !== undefined) {
    // `.` and `..` match the alphabet but name no chat: a chat id is also a file name.
    if (!isChatId(explicit)) {
      throw new OdaError(
        'ODA_ERR_INVALID_REQUEST',
        400,
        'x-session-id must be 1-128 characters of A-Za-z0-9._:-',
        {
          param: 'x-session-id',
        },
      );
    }
    return { id: explicit, source: 'header' };
  }
  const first = namespaced('claude-code', one(headers, 'x-claude-code-session-id'));
  if (first) return { id: first, source: 'client' };
  const meta = namespaced('metadata', metadataSessionId(body));
  if (meta) return { id: meta, source: 'client' };
  for (const [name, ns] of CLIENT_HEADERS.slice(1)) {
    const id = namespaced(ns, one(headers, name));
    if (id) return { id, source: 'client' };
  }
  const codex = namespaced('session', codexSessionId(headers));
  if (codex) return { id: codex, source: 'client' };
  const pck = body.prompt_cache_key;
  const fromKey = typeof pck === 'string' ? namespaced('prompt-cache-key', pck) : undefined;
  if (fromKey) return { id: fromKey, source: 'client' };
  return undefined;
}

/**
 * The chat of the Responses `conversation` a request names (`"conv_..."` or `{"id": "conv_..."}`),
 * namespaced by its source (`conversation:conv_...`); undefined when it names none or a malformed
 * one (ignored, as other client-sent ids are). The provider holds the conversation, so each turn
 * sends only its new items: the chat goes on after the end of its log.
 * @see https://platform.openai.com/docs/api-reference/responses/create#responses-create-conversation
 */
export function conversationSessionId(body: Record<string, unknown>): string | undefined {
  const conversation = body.conversation;
  const id =
    typeof conversation === 'string'
      ? conversation
      : typeof conversation === 'object' && conversation !== null && !Array.isArray(conversation)
        ? (conversation as { id?: unknown }).id
        : undefined;
  return typeof id === 'string' ? namespaced('conversation', id) : undefined;
}

/** A stable chat id from the caller's identity, the format, the system prompt and the first user message. */
export function derivedSessionId(parts: {
  caller: string;
  format: string;
  system: string | undefined;
  firstUserMessage: unknown;
}): string {
  const digest = sha256Hex(
    JSON.stringify([parts.caller, parts.format, parts.system ?? null, parts.firstUserMessage ?? null]),
  );
  return `chat-${digest.slice(0, 32)}`;
}
