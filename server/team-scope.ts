/**
 * Chats belong to the team that created them (SPEC section 8). A team's chat ids live in its own
 * namespace, `t:<team>:<id>`: the same id sent by two teams names two chats, and a team can never
 * name, read or append to another team's chat. Team names cannot contain `:`, so a prefix belongs
 * to exactly one team. Admins and open gateways use ids as given and see every chat.
 */
import type { Caller } from './auth.ts';
import { sha256Hex } from '../lib/sha256.ts';

const MAX_ID = 128;

/** The namespace prefix of a team's chat ids. */
export function teamPrefix(team: string): string {
  return `t:${team}:`;
}

/**
 * The chat id `id` names for `caller`: inside the caller's team namespace (an id already in it is
 * kept; one too long with the prefix is replaced by a digest), or as given for admins and open
 * gateways. `id` must already be a valid chat id.
 */
export function scopedChatId(id: string, caller: Caller): string {
  if (caller.admin || caller.team === undefined) return id;
  const prefix = teamPrefix(caller.team);
  if (id.startsWith(prefix)) return id;
  const scoped = `${prefix}${id}`;
  return scoped.length <= MAX_ID ? scoped : `${prefix}${sha256Hex(id).slice(0, 32)}`;
}

/** A chat of `team` (its header's team) is visible to its own team and to admins; on an open gateway to everyone. */
export function visibleTo(team: string | undefined, caller: Caller): boolean {
  return caller.admin || caller.team === undefined || team === caller.team;
}
