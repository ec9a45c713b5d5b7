/**
 * How the binder names and finds the branches of a chat: a branch's id from the path of message
 * digests it continues, the numbered branches of regenerated answers, and the conversation a branch
 * belongs to. Apart from the binder because both the incoming history's comparison and the
 * response's recording branch a chat, and must name the same branch for the same path.
 */
import type { ChatLog, ChatState, MessageKey } from '../chat-log/chat-log.ts';
import { branchSeed } from '../chat-log/branch-seed.ts';
import { recognises } from '../chat-log/read-models/messages.ts';
import type { Conversation, Event, Header } from '../chat-log/format/current.ts';
import { sha256Hex } from '../lib/sha256.ts';
import { branchChatId } from '../chat-log/chat-id.ts';

/**
 * The id of the branch that continues `base` with the incoming history up to the divergent message.
 * Built only from chat-id characters (`A-Za-z0-9._:-`), so the branch can be created and named back.
 */
export function branchId(base: string, digests: readonly string[]): string {
  return branchChatId(base, pathHash(digests));
}

/** 12 hex characters naming a path of message digests. */
export function pathHash(digests: readonly string[]): string {
  return sha256Hex(digests.join('\n')).slice(0, 12);
}

/** Regenerations of one history get branches of their own up to this many; later ones share the last. */
const MAX_REGENERATIONS = 16;

/** The branch of `id` for the n-th regenerated answer after the messages `prefix`. */
function regenerationId(id: string, prefix: readonly string[], n: number): string {
  return branchId(id, [...prefix, `regenerate:${n}`]);
}

/** The first regeneration branch of `prefix` not made yet. */
export async function freeRegeneration(
  chatLog: ChatLog,
  id: string,
  prefix: readonly string[],
): Promise<string> {
  for (let n = 0; ; n++) {
    const candidate = regenerationId(id, prefix, n);
    if (n >= MAX_REGENERATIONS || !(await chatLog.header(candidate))) return candidate;
  }
}

/** The regeneration branch of `prefix` whose answer is `answer`, if one was logged. */
export async function regenerationWith(
  chatLog: ChatLog,
  id: string,
  prefix: readonly string[],
  answer: MessageKey,
): Promise<string | undefined> {
  for (let n = 0; n <= MAX_REGENERATIONS; n++) {
    const candidate = regenerationId(id, prefix, n);
    const state = await chatLog.open(candidate);
    if (!state) return undefined;
    const logged = state.messages.messages[prefix.length];
    if (logged && recognises(logged, answer)) return candidate;
  }
  return undefined;
}

/** A branch belongs to the session of the chat it branches from. */
export function branchConversation(parent: Header, parentId: string): Conversation {
  return { kind: 'branch', session: parent.conversation?.session ?? parentId };
}

/**
 * The seed of a branch of `parentId` that shares the events before `seedUntil`: those events and
 * the parent's later decisions about them (`branchSeed`), so the branch's own log holds what its
 * requests replay.
 */
export async function readBranchSeed(
  chatLog: ChatLog,
  parentId: string,
  seedUntil: number,
): Promise<Event[]> {
  return seedUntil > 0 ? branchSeed(await chatLog.read(parentId), seedUntil) : [];
}

/**
 * What a branch's first request takes from the chat it branches from, beside the seed: the cache
 * clock and the image replay window of the parent's latest call. That call had the provider cache
 * the prefix the branch shares, so the branch replays the same window and prunes only once that
 * cache has gone cold, as the parent would; the branch's first answer then logs both in the
 * branch's own log. (Logged after the fork point with that call's response, they are not in the
 * seed, whose responses all belong to the shared history.)
 */
export interface ParentCache {
  lastCacheTouchAt: number | undefined;
  imageReplayFrom: number | undefined;
}

/** The parent's cache clock and image replay window, from its state. */
export function parentCache(state: ChatState): ParentCache {
  return {
    lastCacheTouchAt: state.cacheClock.lastCacheTouchAt ?? undefined,
    imageReplayFrom: state.decisions.imageReplay?.from,
  };
}
