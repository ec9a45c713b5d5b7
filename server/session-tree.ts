/**
 * A session's conversations as a tree (SPEC section 10): the main chat, its side chats, its
 * sub-agents' chats and the branches of each, with their roles and counts. A session's chats are
 * named after its main chat (`<main>.side-…`, `<main>.agent-…`, `<chat>.b…`) and name their parent
 * in their header, which is what the tree is built from.
 */
import type { ChatLog } from '../chat-log/chat-log.ts';
import type { ChatPage, ChatSummary } from '../chat-log/chat-page.ts';
import type { Header } from '../chat-log/format/current.ts';
import type { Caller } from './auth.ts';
import { visibleTo } from './team-scope.ts';

/** A session's tree lists at most this many pages of 500 chats. */
const MAX_PAGES = 20;
/** Header reads in flight at once while the tree is built. */
const HEADER_READS = 16;

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
  // The session's chats share the main chat's id as prefix: read them from the chat index, page by page.
  const summaries: ChatSummary[] = [];
  let after: ChatPage['next'];
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await chatLog.listPage({ limit: 500, idPrefix: rootId, ...(after ? { after } : {}) });
    for (const s of page.chats) {
      if ((s.id === rootId || s.id.startsWith(`${rootId}.`)) && visibleTo(s.team, who)) summaries.push(s);
    }
    if (!page.next) break;
    after = page.next;
  }
  // Each chat found still stored (one stat on the file store), as the session read checks its
  // own: a sub-agent or side chat whose log was removed behind the gateway leaves the tree (and
  // the listing) instead of staying until something reads it. The reads go HEADER_READS at a
  // time (Redis pipelines them, the file store's stats run side by side), not one after another.
  const headers: Array<Header | undefined> = new Array(summaries.length);
  let next = 0;
  const reader = async () => {
    for (let i = next++; i < summaries.length; i = next++) {
      const id = summaries[i]!.id;
      headers[i] = id === header.id ? header : await chatLog.checkedHeader(id);
    }
  };
  await Promise.all(Array.from({ length: Math.min(HEADER_READS, summaries.length) }, reader));
  const nodes = new Map<string, ConversationNode>();
  for (const [i, s] of summaries.entries()) {
    const h = headers[i];
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
