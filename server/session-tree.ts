/**
 * A session's conversations as a tree (SPEC section 10): the main chat, its side chats, its
 * sub-agents' chats and the branches of each, with their roles and counts. A session's chats are
 * named after its main chat (`<main>.side-…`, `<main>.agent-…`, `<chat>.b…`) and name their parent
 * in their header, which is what the tree is built from.
 */
import type { ChatLog } from '../chat-log/chat-log.ts';
import type { Header } from '../chat-log/format/current.ts';
import type { Caller } from './auth.ts';
import { visibleTo } from './team-scope.ts';

export interface ConversationNode {
  id: string;
  kind: 'main' | 'side' | 'subagent' | 'branch';
  purpose?: string;
  agentId?: string;
  parent?: string;
  createdAt: number;
  eventCount: number;
  lastActivityAt: number;
  children: ConversationNode[];
}

/** The session `header` belongs to, as a tree rooted at its main chat. */
export async function sessionTree(chatLog: ChatLog, header: Header, who: Caller): Promise<ConversationNode> {
  const rootId = header.conversation?.session ?? header.id;
  const summaries = (await chatLog.list()).filter(
    (s) => (s.id === rootId || s.id.startsWith(`${rootId}.`)) && visibleTo(s.team, who),
  );
  const nodes = new Map<string, ConversationNode>();
  for (const s of summaries) {
    const h = s.id === header.id ? header : await chatLog.header(s.id);
    if (!h) continue;
    const c = h.conversation;
    nodes.set(s.id, {
      id: s.id,
      kind: c?.kind ?? (h.parent ? 'branch' : 'main'),
      ...(c?.purpose ? { purpose: c.purpose } : {}),
      ...(c?.agentId ? { agentId: c.agentId } : {}),
      ...(h.parent ? { parent: h.parent } : {}),
      createdAt: s.createdAt,
      eventCount: s.eventCount,
      lastActivityAt: s.lastActivityAt,
      children: [],
    });
  }
  const root = nodes.get(rootId) ?? {
    id: rootId,
    kind: 'main' as const,
    createdAt: header.createdAt,
    eventCount: 0,
    lastActivityAt: header.createdAt,
    children: [],
  };
  for (const node of nodes.values()) {
    if (node === root) continue;
    (nodes.get(node.parent ?? rootId) ?? root).children.push(node);
  }
  const order = (a: ConversationNode, b: ConversationNode) =>
    a.createdAt - b.createdAt || a.id.localeCompare(b.id);
  const sort = (n: ConversationNode) => {
    n.children.sort(order);
    n.children.forEach(sort);
  };
  sort(root);
  return root;
}
