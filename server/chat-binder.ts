/**
 * Binds a model call to its chat (SPEC sections 2 and 6): finds the chat id, creates the chat or
 * branches it when the incoming history diverges from the log, appends only the messages the log
 * does not have yet (and the request's settings), and hands the pipeline the chat's recorded
 * decisions and cache clock. Later, it appends the response.
 *
 * Here the binder decides the chat and the verified prefix; the parts it calls are beside it:
 * `chat-binder-append-incoming.ts` (the comparison with the log and the appends),
 * `chat-binder-branches.ts` (branch and regeneration ids), `chat-binder-binding.ts` (the binding and
 * the response's recording), `chat-binder-header-metadata.ts` (the `x-session-*` headers).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ChatLog } from '../chat-log/chat-log.ts';
import { ChatRemoved } from '../chat-log/chat-id.ts';
import type { Mechanisms, NewEvent } from '../chat-log/format/current.ts';
import { mapInTurns, type Turns } from '../lib/in-turns.ts';
import {
  awaitExtendedBind,
  BoundPrefixes,
  longestVerified,
  PendingBinds,
  sentList,
  wirePrefixHashes,
  type WireHashes,
  type PrefixEntry,
  type WireRanges,
} from './bound-prefixes.ts';
import type { ChatDecisions } from '../middleware/call-context.ts';
import type { ImageFacts } from '../middleware/image-set-aside/index.ts';
import type { FormatAdapter, NormalizedResponse } from '../providers/provider.ts';
import type { ImageRef } from '../providers/request-view.ts';
import type { Caller } from './auth.ts';
import type { Config } from '../config/config.ts';
import type { Clock } from '../lib/clock.ts';
import { OdaError } from '../lib/errors.ts';
import { derivedSessionId, requestedSessionId } from './session-id.ts';
import { KnownTools } from './known-tools.ts';
import { placeInSession, sideChatId, subagentChatId, type ConversationPlace } from './conversations.ts';
import { scopedChatId, visibleTo } from './team-scope.ts';
import { appendIncoming, StalePrefix } from './chat-binder-append-incoming.ts';
import { chatBinding } from './chat-binder-binding.ts';
import { headerMetadata } from './chat-binder-header-metadata.ts';
import { sha256Hex } from '../lib/sha256.ts';

export interface BindInput {
  requestId: string;
  startedAt: number;
  adapter: FormatAdapter;
  providerName: string;
  body: Record<string, unknown>;
  /** The body's bytes as sent, and where its top-level list's elements are in them. */
  raw?: Buffer;
  wireRanges?: WireRanges;
  /** Where the body's top-level `tools` array is in `raw` (start, end exclusive). */
  toolsRange?: readonly [number, number];
  headers: IncomingHttpHeaders;
  caller: Caller;
  /**
   * The caller's party's turns of the event loop, for the slices of a large request; without, a
   * small request's slices each wait for a plain turn, never behind large requests' (SPEC 14).
   */
  turns?: Turns;
  /**
   * The chat a `previous_response_id` continues, and that response; or the chat of a
   * `conversation` (no response): the provider holds the history, the request sends only what
   * follows it, so its messages are appended after that response's answer in the chat (a branch
   * when the chat went on past it), or after the end of the conversation's chat.
   */
  continues?: { chatId: string; responseId?: string };
  /**
   * The side conversation this call belongs to whatever it looks like (a compaction endpoint's
   * calls): logged in the session's side chat of that purpose (whose parent is the sub-agent's chat
   * when the client names a sub-agent, as for its own side requests), also when it names a
   * response, whose chat is then the session.
   */
  side?: string;
}

export interface ResponseRecord {
  status: number;
  ok: boolean;
  attempts: number;
  retries: number;
  response?: NormalizedResponse;
  error?: string;
  /** What the gateway's mechanisms did to the request (removals, image replay window). */
  mechanisms?: Mechanisms;
}

export interface ChatBinding {
  chatId: string;
  decisions: ChatDecisions;
  lastCacheTouchAt: number | undefined;
  describeImage(image: ImageRef, key: string): ImageFacts;
  record(events: NewEvent[]): Promise<void>;
  /**
   * Appends the answer and its response event; resolves to the chat they were logged in. `again`:
   * an earlier try failed, and may have stored them before its reply was lost.
   */
  recordResponse(r: ResponseRecord, again?: boolean): Promise<string>;
  /**
   * The request's history: wire messages recognised from the bytes of a request bound before it,
   * and messages normalized and compared with the log.
   */
  history: { recognised: number; compared: number };
}

export class ChatBinder {
  constructor(
    private readonly chatLog: ChatLog,
    private readonly config: Readonly<Config>,
    private readonly clock: Clock,
  ) {}

  /**
   * Per chat, the wire messages of its last few bound requests (newest first, of different
   * lengths), hashed, and how many logged messages they stand for. A request whose history starts
   * with those same wire messages needs only the rest normalized, stored and compared: the log is
   * append-only, so a verified prefix stays so (a compaction starts the list again). Several, so
   * concurrent requests of one chat, which arrive in any order, find theirs. In memory and per
   * replica; a miss only costs the full comparison.
   */
  private readonly prefixes = new BoundPrefixes();

  /** Binds in progress per chat, so a request waits for the one whose history it extends. */
  private readonly pending = new PendingBinds();

  /** Recently seen tool lists, by their bytes, with their references. */
  private readonly knownTools = new KnownTools();

  /** How many binds of chat `id` are in progress (requests comparing or appending their history). */
  bindsInProgress(id: string): number {
    return this.pending.count(id);
  }

  async bind(call: BindInput): Promise<ChatBinding> {
    const wire = call.adapter.wireMessages(call.body);
    const requested = requestedSessionId(call.headers, call.body);
    const explicit = requested?.source === 'header' ? requested.id : undefined;
    const sessionId =
      explicit === undefined && call.continues !== undefined
        ? call.continues.chatId
        : scopedChatId(requested?.id ?? (await this.derivedId(call, wire)), call.caller);
    // A side request that names a response is logged in a side chat of that response's chat: it
    // continues no chat of its own.
    const input: BindInput = call.side !== undefined ? { ...call, continues: undefined } : call;
    // Cheap refusals first, before any normalizing or attachment writing.
    const meta = headerMetadata(input.headers, input.caller);
    // A side request's sub-agent is read from the client's headers, unless its chat is a response's
    // (the session id is then that chat, not the client's).
    const place: ConversationPlace =
      input.continues !== undefined
        ? { kind: 'main' }
        : placeInSession(
            call.continues === undefined ? requested?.source : undefined,
            input.headers,
            input.adapter.requestTraits(input.body),
            input.side,
          );
    const baseId = await this.conversationChat(sessionId, place, input, wire, meta);
    // Only an admin-made or pre-teams chat can sit in a team's namespace; it is not the team's.
    // The chat's team also names the folder its images go to (an admin's call into a team's chat).
    let team = input.caller.team;
    for (const id of new Set([sessionId, baseId])) {
      const existing = await this.chatLog.header(id);
      if (existing && !visibleTo(existing.team, input.caller)) {
        throw new OdaError('ODA_ERR_NOT_FOUND', 404, `no chat with id "${id}"`, { param: 'x-session-id' });
      }
      if (existing && id === baseId) team = existing.team;
    }
    // A continuation by response id sends only new items: nothing to compare, all to append.
    // The newest prefix wherever it leads (a branch of the chat, too); older ones only into the
    // chat itself, where they find what a full comparison would.
    const candidates = input.continues !== undefined ? [] : this.prefixes.candidates(baseId);
    const sent = sentList(input.raw, input.wireRanges, input.body, wire);
    // The chat's newest prefix carries its bytes: a history that starts with them is compared,
    // not hashed again.
    const resume = candidates[0];
    const hashes = await wirePrefixHashes(
      wire,
      candidates.map((c) => c.wireCount),
      input.turns,
      sent,
      resume,
    );
    let cached = longestVerified(candidates, hashes.at);
    const pending =
      input.continues !== undefined ? undefined : this.pending.start(baseId, wire.length, hashes.full);
    try {
      // Another request of this chat is logging a history this one starts with: wait for it, then
      // continue after what it logged.
      const from = cached ? cached.wireCount : 0;
      if (
        pending &&
        (await awaitExtendedBind(pending.earlier, wire, hashes.at, from, input.turns, sent, resume))
      )
        cached = longestVerified(this.prefixes.candidates(baseId), hashes.at);
      try {
        return await this.bindAfter(input, baseId, team, meta, wire, hashes, cached);
      } catch (err) {
        // The chat's log went away under the gateway (its file removed by hand): the store has
        // forgotten it, so the request creates it anew, as a gateway that never saw it would.
        if (!(err instanceof ChatRemoved)) throw err;
        this.prefixes.forget(baseId);
        return await this.bindAfter(input, baseId, team, meta, wire, hashes, undefined);
      }
    } finally {
      pending?.settle();
    }
  }

  /** Normalizes, stores and appends what follows the verified prefix `cached`, then remembers it. */
  private async bindAfter(
    input: BindInput,
    baseId: string,
    team: string | undefined,
    meta: Record<string, unknown>,
    wire: readonly unknown[],
    own: WireHashes,
    cached: PrefixEntry | undefined,
  ): Promise<ChatBinding> {
    // The same tool definitions as a recent request's, byte for byte, are not digested again.
    const format = input.adapter.format;
    const toolsBytes =
      input.raw && input.toolsRange
        ? input.raw.subarray(input.toolsRange[0], input.toolsRange[1])
        : undefined;
    const knownTools = toolsBytes ? this.knownTools.get(format, toolsBytes) : undefined;
    const normalized = input.adapter.normalizeRequest(input.body, {
      fromIndex: cached ? cached.wireCount : 0,
      ...(knownTools ? { tools: knownTools } : {}),
    });
    if (toolsBytes && !knownTools) this.knownTools.remember(format, toolsBytes, normalized.tools);
    const messages = await this.chatLog.storeImages(normalized.messages, team);
    const keys = await mapInTurns(
      messages,
      (m, i) => this.chatLog.messageKey(m, normalized.messages[i]!.refersTo),
      input.turns,
    );
    const known = cached ? cached.loggedCount : 0;

    const request: Extract<NewEvent, { type: 'request' }> = {
      type: 'request',
      requestId: input.requestId,
      format: input.adapter.format,
      provider: input.providerName,
      model: normalized.model,
      // Every top-level field but the conversation, system prompt, tools and model, as sent.
      settings: normalized.settings as Record<string, JsonValue>,
      tools: normalized.tools,
      ...(normalized.system !== undefined ? { systemDigest: sha256Hex(normalized.system) } : {}),
    };
    // A verified prefix may belong to a branch of the named chat: continue there directly.
    const start = cached ? cached.chatId : baseId;
    let appended: Awaited<ReturnType<typeof appendIncoming>>;
    try {
      appended = await appendIncoming(
        this.chatLog,
        input.turns,
        start,
        meta,
        messages,
        keys,
        known,
        request,
        0,
        input.continues,
        input.startedAt,
      );
    } catch (err) {
      if (!(err instanceof StalePrefix) || !cached) throw err;
      this.prefixes.forget(baseId);
      return this.bindAfter(input, baseId, team, meta, wire, own, undefined);
    }
    const { chatId, state, answerAt, compacted, parent } = appended;
    // The wire messages stand for the chat's messages before the answer (after a compaction, the
    // ones that replaced the summarised history).
    if (input.continues === undefined)
      this.prefixes.remember(
        baseId,
        {
          wireCount: wire.length,
          hash: own.full,
          loggedCount: answerAt,
          chatId,
          ...(own.print ? { print: own.print } : {}),
        },
        compacted,
      );
    return chatBinding(
      this.chatLog,
      this.clock,
      this.config.attachmentsDir,
      chatId,
      state,
      input,
      answerAt,
      { recognised: cached ? cached.wireCount : 0, compared: messages.length },
      parent,
    );
  }

  /**
   * The chat of the request's conversation in its session (SPEC section 10), with the header
   * metadata a chat it creates gets: the main chat is the session's; a side request or a sub-agent
   * gets a child chat whose header names the main chat as parent (a sub-agent's side request: the
   * sub-agent's chat).
   */
  private async conversationChat(
    sessionId: string,
    place: ConversationPlace,
    input: BindInput,
    wire: readonly unknown[],
    meta: Record<string, unknown>,
  ): Promise<string> {
    if (place.kind === 'main') {
      meta.conversation = { kind: 'main', session: sessionId };
      return sessionId;
    }
    meta.parent = sessionId;
    if (place.kind === 'subagent') {
      meta.conversation = { kind: 'subagent', session: sessionId, agentId: place.agentId };
      return subagentChatId(sessionId, place.agentId);
    }
    meta.conversation = { kind: 'side', session: sessionId, purpose: place.purpose };
    const root = await this.rootOf(input, wire);
    if (place.agentId === undefined)
      return sideChatId(sessionId, place.purpose, [root.system, root.firstUserMessage]);
    // A sub-agent's side request: a side chat of the session whose parent is the sub-agent's chat,
    // apart from the main conversation's (a Codex sub-agent starts from the same context as the
    // main thread, so the root alone would not tell them apart).
    meta.parent = subagentChatId(sessionId, place.agentId);
    return sideChatId(sessionId, place.purpose, [root.system, root.firstUserMessage, place.agentId]);
  }

  /** What a conversation is rooted in: the system prompt and the first user message's digest. */
  private async rootOf(
    input: BindInput,
    wire: readonly unknown[],
  ): Promise<{ system: string | undefined; firstUserMessage: string | undefined }> {
    const firstUser = wire.findIndex((m) => (m as { role?: unknown } | null)?.role === 'user');
    // Only the system prompt and the first user message are read: the tools are not digested.
    const head = input.adapter.normalizeRequest(
      input.adapter.withWireMessages(input.body, wire.slice(0, firstUser + 1)),
      { tools: [] },
    );
    const stored = await this.chatLog.storeImages(
      head.messages.filter((m) => m.role === 'user').slice(0, 1),
      input.caller.team,
    );
    return {
      system: head.system,
      firstUserMessage: stored[0] ? this.chatLog.messageDigest(stored[0]) : undefined,
    };
  }

  /** The derived chat id: caller, format, system prompt and the first user message (SPEC section 2). */
  private async derivedId(input: BindInput, wire: readonly unknown[]): Promise<string> {
    const root = await this.rootOf(input, wire);
    return derivedSessionId({
      caller: input.caller.identity,
      format: input.adapter.format,
      system: root.system,
      firstUserMessage: root.firstUserMessage,
    });
  }
}

type JsonValue = Extract<NewEvent, { type: 'request' }>['settings'][string];
