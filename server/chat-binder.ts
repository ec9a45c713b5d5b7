/**
 * Binds a model call to its chat (SPEC sections 2 and 6): finds the chat id, creates the chat or
 * branches it when the incoming history diverges from the log, appends only the messages the log
 * does not have yet (and the request's settings), and hands the pipeline the chat's recorded
 * decisions and cache clock. Later, it appends the response.
 */
import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ChatLog, ChatState, LogMessage } from '../chat-log/chat-log.ts';
import { isChatId } from '../chat-log/chat-id.ts';
import { describeImage, decodeImageSource } from '../chat-log/attachments.ts';
import type {
  Conversation,
  Event,
  Header,
  Mechanisms,
  NewEvent,
  ToolRef,
} from '../chat-log/format/current.ts';
import { OdaError } from '../lib/errors.ts';
import { mapInTurns, type TurnTaker } from '../lib/in-turns.ts';
import { appendInTurns } from './append-in-turns.ts';
import {
  awaitExtendedBind,
  BoundPrefixes,
  longestVerified,
  PendingBinds,
  sentList,
  wirePrefixHashes,
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
import { derivedSessionId, requestedSessionId } from './session-id.ts';
import { KnownTools } from './known-tools.ts';
import {
  childChatId,
  placeInSession,
  sideChatId,
  subagentChatId,
  type ConversationPlace,
} from './conversations.ts';
import { compactionOf, isSummaryRequest } from './compaction.ts';
import { scopedChatId, visibleTo } from './team-scope.ts';

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
   * The chat a `previous_response_id` continues: the provider holds the history, the request sends
   * only what follows it, so its messages are appended after the chat's.
   */
  continues?: string;
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
  /** Appends the answer and its response event; resolves to the chat they were logged in. */
  recordResponse(r: ResponseRecord): Promise<string>;
  /**
   * The request's history: wire messages recognised from the bytes of a request bound before it,
   * and messages normalized and compared with the log.
   */
  history: { recognised: number; compared: number };
}

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Header metadata a request may give for a chat it creates (`x-session-*`). */
function headerMetadata(headers: IncomingHttpHeaders, caller: Caller): Record<string, unknown> {
  const depth = one(headers, 'x-session-depth');
  const meta: Record<string, unknown> = {
    cwd: one(headers, 'x-session-cwd'),
    parent: one(headers, 'x-session-parent'),
    origin: one(headers, 'x-session-origin'),
    preset: one(headers, 'x-session-preset'),
    team: caller.team,
  };
  if (depth !== undefined) {
    if (!/^\d{1,6}$/.test(depth)) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'x-session-depth must be a whole number >= 0', {
        param: 'x-session-depth',
      });
    }
    meta.depth = Number(depth);
  }
  if (meta.parent !== undefined && !isChatId(meta.parent)) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      'x-session-parent must be a chat id (1-128 of A-Za-z0-9._:-, not . or ..)',
      {
        param: 'x-session-parent',
      },
    );
  }
  return meta;
}

/**
 * The id of the branch that continues `base` with the incoming history up to the divergent message.
 * Built only from chat-id characters (`A-Za-z0-9._:-`), so the branch can be created and named back.
 */
function branchId(base: string, digests: readonly string[]): string {
  return `${base.slice(0, 128 - 14)}.b${pathHash(digests)}`;
}

/** 12 hex characters naming a path of message digests. */
function pathHash(digests: readonly string[]): string {
  return createHash('sha256').update(digests.join('\n')).digest('hex').slice(0, 12);
}

/** Appends of events the binder built itself: not validated against the log's schema again. */
const BUILT = { built: true } as const;

/** Regenerations of one history get branches of their own up to this many; later ones share the last. */
const MAX_REGENERATIONS = 16;

const sameTools = (a: readonly ToolRef[], b: readonly ToolRef[]) =>
  a.length === b.length && a.every((t, i) => t.name === b[i]!.name && t.digest === b[i]!.digest);

export class ChatBinder {
  constructor(
    private readonly chatLog: ChatLog,
    private readonly config: Readonly<Config>,
    private readonly clock: Clock,
    /** Turns of the event loop shared with other requests, for the slices of a large request. */
    private readonly turns?: TurnTaker,
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

  async bind(input: BindInput): Promise<ChatBinding> {
    const wire = input.adapter.wireMessages(input.body);
    const requested = requestedSessionId(input.headers, input.body);
    const explicit = requested?.source === 'header' ? requested.id : undefined;
    const sessionId =
      explicit === undefined && input.continues !== undefined
        ? input.continues
        : scopedChatId(requested?.id ?? (await this.derivedId(input, wire)), input.caller);
    // Cheap refusals first, before any normalizing or attachment writing.
    const meta = headerMetadata(input.headers, input.caller);
    const place: ConversationPlace =
      input.continues !== undefined
        ? { kind: 'main' }
        : placeInSession(requested?.source, input.headers, input.adapter.requestTraits(input.body));
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
    const hashes = await wirePrefixHashes(
      wire,
      candidates.map((c) => c.wireCount),
      this.turns,
      sent,
    );
    let cached = longestVerified(candidates, hashes.at);
    const pending =
      input.continues !== undefined ? undefined : this.pending.start(baseId, wire.length, hashes.full);
    try {
      // Another request of this chat is logging a history this one starts with: wait for it, then
      // continue after what it logged.
      const from = cached ? cached.wireCount : 0;
      if (pending && (await awaitExtendedBind(pending.earlier, wire, hashes.at, from, this.turns, sent)))
        cached = longestVerified(this.prefixes.candidates(baseId), hashes.at);
      return await this.bindAfter(input, baseId, team, meta, wire, hashes.full, cached);
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
    fullHash: string,
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
    const digests = await mapInTurns(messages, (m) => this.chatLog.messageDigest(m), this.turns);
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
      ...(normalized.system !== undefined
        ? { systemDigest: createHash('sha256').update(normalized.system).digest('hex') }
        : {}),
    };
    // A verified prefix may belong to a branch of the named chat: continue there directly.
    const start = cached ? cached.chatId : baseId;
    const { chatId, state, answerAt, compacted } = await this.appendIncoming(
      start,
      meta,
      messages,
      digests,
      known,
      request,
      0,
      input.continues !== undefined,
      input.startedAt,
    );
    // The wire messages stand for the chat's messages before the answer (after a compaction, the
    // ones that replaced the summarised history).
    if (input.continues === undefined)
      this.prefixes.remember(
        baseId,
        { wireCount: wire.length, hash: fullHash, loggedCount: answerAt, chatId },
        compacted,
      );
    return this.binding(chatId, state, input, answerAt, {
      recognised: cached ? cached.wireCount : 0,
      compared: messages.length,
    });
  }

  /**
   * The chat of the request's conversation in its session (SPEC section 10), with the header
   * metadata a chat it creates gets: the main chat is the session's; a side request or a sub-agent
   * gets a child chat whose header names the main chat as parent.
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
    return sideChatId(sessionId, place.purpose, [root.system, root.firstUserMessage]);
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

  private async ensureChat(
    id: string,
    meta: Record<string, unknown>,
    seed: readonly Event[] = [],
  ): Promise<void> {
    if (await this.chatLog.open(id)) return;
    await this.chatLog.createChat({ id, ...meta }, seed);
  }

  /**
   * Under the chat's lock: compare the incoming history with the logged one, branch when they
   * diverge, then append what is new and the request's settings.
   */
  private async appendIncoming(
    id: string,
    meta: Record<string, unknown>,
    messages: LogMessage[],
    digests: string[],
    /** How many logged messages the incoming ones start after (a verified wire prefix). */
    known: number,
    request: Extract<NewEvent, { type: 'request' }>,
    depth = 0,
    /** True when the incoming messages follow the whole logged history (a previous_response_id). */
    appendAll = false,
    /** When the request started (a regeneration starts after the answer it replaces was logged). */
    startedAt = Number.POSITIVE_INFINITY,
  ): Promise<{ chatId: string; state: ChatState; answerAt: number; compacted: boolean }> {
    await this.ensureChat(id, meta);
    const outcome = await this.chatLog.withChat(id, async (state) => {
      const logged = state.messages.messages;
      if (appendAll) known = logged.length;
      // Position in the chat's messages: `known` are shared already; compare from there.
      let k = known;
      while (k < logged.length && k - known < digests.length && logged[k]!.digest === digests[k - known]) k++;
      const diverges = k < logged.length && k - known < digests.length;
      // A history rebuilt from the chat's own summary continues the chat (SPEC section 10).
      const session = state.header.conversation?.session ?? id;
      const replaced = diverges
        ? await compactionOf(this.chatLog, id, session, logged, k, messages[k - known])
        : undefined;
      if (diverges && !replaced && depth < 8 && isSummaryRequest(logged, k, messages, k - known)) {
        // A summary request (compaction) is a side request of the session. Its side chat holds
        // what it adds (the instruction) and the summary, not a second copy of the history it
        // summarises (that stays in this chat, messages 0..k-1); the compacted history will be
        // built from its answer.
        const prefix = logged.slice(0, k).map((m) => m.digest);
        return {
          side: {
            id: childChatId(session, `.side-summary-${pathHash([...prefix, digests[k - known]!])}`),
            from: k - known,
            header: state.header,
            session,
          },
        };
      }
      if (diverges && !replaced && depth < 8) {
        // Seed the branch with every event before the first logged message it does not share.
        const seedUntil = logged[k]!.seq;
        const prefix = logged.slice(0, k).map((m) => m.digest);
        // A continuation of a regenerated answer goes on in the branch that answer was logged in.
        const regenerated =
          logged[k]!.role === 'model'
            ? await this.regenerationWith(id, prefix, digests[k - known]!)
            : undefined;
        const path = [...prefix, digests[k - known]!];
        return { branch: { id: regenerated ?? branchId(id, path), seedUntil, header: state.header } };
      }
      // Only a request that started after that answer was logged: concurrent requests for one
      // history (an agent's parallel calls, a burst) all belong to the chat itself.
      const answeredAt = logged[k]?.answeredAt;
      if (
        !diverges &&
        k - known === digests.length &&
        answeredAt !== undefined &&
        startedAt > answeredAt &&
        depth < 8
      ) {
        // The log already answered this very history: the client asks for another answer. The
        // exchange goes to a branch chosen now, so the answer's x-session-id (sent before a stream's
        // first byte) names the chat it is logged in (SPEC section 2).
        const prefix = logged.slice(0, k).map((m) => m.digest);
        return {
          branch: {
            id: await this.freeRegeneration(id, prefix),
            seedUntil: logged[k]!.seq,
            header: state.header,
          },
        };
      }
      const fresh = messages.slice(k - known);
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
      await appendInTurns(this.chatLog, id, events, state.count, this.turns);
      // Messages, a tools change and a request event move neither the decisions nor the cache
      // clock, so the state read under the lock is still the one the pipeline needs.
      return { state, answerAt: k + fresh.length, compacted: replaced !== undefined };
    });
    if (outcome.state) {
      const { state, answerAt, compacted } = outcome;
      return { chatId: id, state, answerAt, compacted };
    }
    if (outcome.side) {
      const { id: sideId, from, header: parentHeader, session } = outcome.side;
      if (!(await this.chatLog.open(sideId))) {
        await this.chatLog.createChat({
          id: sideId,
          ...meta,
          team: parentHeader.team,
          parent: session,
          conversation: { kind: 'side', session, purpose: 'summary' },
        });
      }
      return this.appendIncoming(
        sideId,
        meta,
        messages.slice(from),
        digests.slice(from),
        0,
        request,
        depth + 1,
        false,
        startedAt,
      );
    }
    const { id: childId, seedUntil, header: parentHeader } = outcome.branch!;
    if (!(await this.chatLog.open(childId))) {
      const seed = seedUntil > 0 ? await this.chatLog.read(id, 0, seedUntil) : [];
      await this.chatLog.createChat(
        {
          id: childId,
          ...meta,
          team: parentHeader.team,
          parent: id,
          conversation: branchConversation(parentHeader, id),
        },
        seed,
      );
    }
    return this.appendIncoming(childId, meta, messages, digests, known, request, depth + 1, false, startedAt);
  }

  /** The branch of `id` for the n-th regenerated answer after the messages `prefix`. */
  private regenerationId(id: string, prefix: readonly string[], n: number): string {
    return branchId(id, [...prefix, `regenerate:${n}`]);
  }

  /** The first regeneration branch of `prefix` not made yet. */
  private async freeRegeneration(id: string, prefix: readonly string[]): Promise<string> {
    for (let n = 0; ; n++) {
      const candidate = this.regenerationId(id, prefix, n);
      if (n >= MAX_REGENERATIONS || !(await this.chatLog.header(candidate))) return candidate;
    }
  }

  /** The regeneration branch of `prefix` whose answer has `answerDigest`, if one was logged. */
  private async regenerationWith(
    id: string,
    prefix: readonly string[],
    answerDigest: string,
  ): Promise<string | undefined> {
    for (let n = 0; n <= MAX_REGENERATIONS; n++) {
      const candidate = this.regenerationId(id, prefix, n);
      const state = await this.chatLog.open(candidate);
      if (!state) return undefined;
      if (state.messages.messages[prefix.length]?.digest === answerDigest) return candidate;
    }
    return undefined;
  }

  /** `answerAt`: the index, among the chat's messages, of the answer this request will get. */
  private binding(
    chatId: string,
    state: ChatState,
    input: BindInput,
    answerAt: number,
    history: ChatBinding['history'],
  ): ChatBinding {
    const d = state.decisions;
    const decisions: ChatDecisions = {
      trims: Object.values(d.trims).sort((a, b) => a.seq - b.seq),
      setAside: Object.values(d.setAside).sort((a, b) => a.seq - b.seq),
      projection: d.pruning?.projection ?? [],
      ...(d.imageReplay ? { imageReplayFrom: d.imageReplay.from } : {}),
    };
    const record = async (events: NewEvent[]) => {
      try {
        await this.chatLog.append(chatId, events, undefined, BUILT);
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
    const attachmentsDir = this.config.attachmentsDir;
    const chatLog = this.chatLog;
    const team = state.header.team;
    const clock = this.clock;
    return {
      chatId,
      decisions,
      history,
      lastCacheTouchAt: state.cacheClock.lastCacheTouchAt ?? undefined,
      describeImage(image) {
        if (image.source.kind !== 'base64') return {};
        const decoded = decodeImageSource(image.source);
        if (!decoded) return {};
        const facts = describeImage(decoded.bytes);
        if (!facts) return { bytes: decoded.bytes.length };
        const sha = createHash('sha256').update(decoded.bytes).digest('hex');
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
      async recordResponse(r) {
        // The answer as the log keeps it: one model message, or one per output item (Responses).
        const answer = r.response
          ? await chatLog.storeImages(r.response.messages ?? [r.response.message], team)
          : [];
        const digests = answer.map((m) => chatLog.messageDigest(m));
        const response: NewEvent = {
          type: 'response',
          requestId: input.requestId,
          startedAt: input.startedAt,
          status: r.status,
          ok: r.ok,
          ...(r.response?.model ? { model: r.response.model } : {}),
          ...(r.response?.stopReason ? { stopReason: r.response.stopReason } : {}),
          ...(r.response?.usage ? { usage: r.response.usage } : {}),
          ...(r.response?.responseId ? { responseId: r.response.responseId } : {}),
          attempts: r.attempts,
          latencyMs: Math.max(0, Math.round(clock.now() - input.startedAt)),
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
        // Under the chat's lock, like the appends of incoming messages. The answer belongs right
        // after the history it answers (message `answerAt`). If the log already holds this very
        // answer there (a concurrent request's client sent it back), it is not logged twice; if it
        // holds another answer there (two concurrent requests for one history), this one starts a
        // branch, exactly the branch a client continuing with it will be bound to.
        const branch = await chatLog.withChat(chatId, async (latest) => {
          const logged = latest.messages.messages;
          const there = logged[answerAt];
          if (answer.length && there && there.digest !== digests[0]) {
            const path = [...logged.slice(0, answerAt).map((m) => m.digest), digests[0]!];
            return { id: branchId(chatId, path), seedUntil: there.seq, header: latest.header };
          }
          const events = there ? [] : answerEvents();
          events.push(response);
          await chatLog.append(chatId, events, latest.count, BUILT);
          return undefined;
        });
        if (!branch) return chatId;
        if (!(await chatLog.open(branch.id))) {
          const seed = branch.seedUntil > 0 ? await chatLog.read(chatId, 0, branch.seedUntil) : [];
          const {
            version: _v,
            id: _id,
            createdAt: _c,
            seeded: _s,
            inheritedEvents: _i,
            ...meta
          } = branch.header;
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
          const events = latest.messages.messages[answerAt] ? [] : answerEvents();
          events.push(response);
          await chatLog.append(branch.id, events, latest.count, BUILT);
        });
        return branch.id;
      },
    };
  }
}

/** A branch belongs to the session of the chat it branches from. */
function branchConversation(parent: Header, parentId: string): Conversation {
  return { kind: 'branch', session: parent.conversation?.session ?? parentId };
}

type JsonValue = Extract<NewEvent, { type: 'request' }>['settings'][string];
