/**
 * Reads what the gateway logged for a client session: the chats it made (`GET /v1/sessions`), a
 * chat's header and conversation tree (`GET /v1/sessions/{id}`) and its events.
 */
import assert from 'node:assert/strict';
import type { Event, Header, MessageEvent } from '../../chat-log/format/current.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';

export interface TreeNode {
  id: string;
  kind: string;
  purpose?: string;
  agentId?: string;
  parent?: string;
  eventCount: number;
  children: TreeNode[];
}

/** Ids of every chat the gateway holds whose id is `main` or starts with `main.`, sorted. */
export async function chatsOf(gatewayUrl: string, main: string): Promise<string[]> {
  const res = await fetch(`${gatewayUrl}/v1/sessions?limit=500`);
  assert.equal(res.status, 200, `GET /v1/sessions: ${res.status}`);
  const body = (await res.json()) as { data?: Array<{ id: string }>; sessions?: Array<{ id: string }> };
  return (body.data ?? body.sessions ?? [])
    .map((s) => s.id)
    .filter((id) => id === main || id.startsWith(`${main}.`))
    .sort();
}

/** A chat's header and its session's conversation tree. */
export async function sessionInfo(
  gatewayUrl: string,
  id: string,
): Promise<{ header: Header; conversations?: TreeNode }> {
  const res = await fetch(`${gatewayUrl}/v1/sessions/${encodeURIComponent(id)}`);
  assert.equal(res.status, 200, `GET /v1/sessions/${id}: ${res.status}`);
  return (await res.json()) as { header: Header; conversations?: TreeNode };
}

/** The message events of chat `id`. */
export async function loggedMessages(gatewayUrl: string, id: string): Promise<MessageEvent[]> {
  return eventsOfType(await sessionEvents(gatewayUrl, id), 'message');
}

/** Every event of chat `id`. */
export function loggedEvents(gatewayUrl: string, id: string): Promise<Event[]> {
  return sessionEvents(gatewayUrl, id);
}

/** The text of a logged message: its text parts and the text inside its tool results. */
export function loggedText(m: MessageEvent): string {
  return m.content
    .map((p) => {
      if (p.kind === 'text') return p.text;
      if (p.kind === 'tool-result') return p.content.map((c) => (c.kind === 'text' ? c.text : '')).join('\n');
      if (p.kind === 'tool-call') return `${p.name}(${p.args})`;
      return '';
    })
    .join('\n');
}

/** The nodes of a conversation tree, depth first. */
export function treeNodes(root: TreeNode): TreeNode[] {
  return [root, ...root.children.flatMap(treeNodes)];
}
