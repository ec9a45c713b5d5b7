// @ts-check
/**
 * A session's conversations as a tree (the main chat, its sub-agents, side chats and branches):
 * the tree from a session's detail, its list of buttons, and the key a refresh compares.
 */
import { el } from './dom.js';
import { num } from './format.js';

/** @typedef {import('./sessions.js').Summary} Summary */

/**
 * The conversations of a session as a tree: the route's `conversations` when it gives them, else
 * the chat itself with the chats of the list page that name it as their parent.
 * @param {any} detail
 * @param {Summary[]} items the list page shown
 * @returns {any[]}
 */
export function conversationTree(detail, items) {
  const given = detail.conversations;
  if (Array.isArray(given)) return given;
  if (given && typeof given === 'object') return [given];
  const id = detail.header?.id;
  return [
    {
      id,
      kind: detail.header?.conversation?.kind ?? 'main',
      messages: detail.snapshot?.values?.totals?.messageCount,
      children: items
        .filter((s) => s.parent === id || s.conversation?.session === id)
        .filter((s) => s.id !== id)
        .map((s) => ({
          id: s.id,
          kind: s.conversation?.kind ?? 'branch',
          agentId: s.conversation?.agentId,
          purpose: s.conversation?.purpose,
          children: [],
        })),
    },
  ];
}

/**
 * @param {any[]} nodes
 * @param {string} session
 * @param {string} selected
 * @param {(session: string, chat: string) => void} go shows a conversation picked
 * @returns {HTMLElement}
 */
export function treeList(nodes, session, selected, go) {
  return el(
    'ul',
    'tree',
    nodes.map((node) => {
      const id = String(node.id);
      const about = [
        node.agentId ? `agent ${node.agentId}` : '',
        node.purpose ?? '',
        typeof node.messages === 'number' ? `${num(node.messages)} messages` : '',
        typeof node.eventCount === 'number' ? `${num(node.eventCount)} events` : '',
      ]
        .filter(Boolean)
        .join(' · ');
      return el(
        'li',
        null,
        el(
          'button',
          {
            attrs: {
              type: 'button',
              class: id === selected ? 'conversation selected' : 'conversation',
              'aria-current': id === selected ? 'true' : undefined,
              title: id,
            },
            data: { id },
            on: { click: () => go(session, id) },
          },
          el('span', `kind kind-${node.kind}`, String(node.kind ?? '')),
          el('span', 'conversation-id', id),
          el('span', 'muted', about),
        ),
        Array.isArray(node.children) && node.children.length > 0
          ? treeList(node.children, session, selected, go)
          : null,
      );
    }),
  );
}

/**
 * The tree's ids, kinds and counts: what a refresh compares before drawing it again.
 * @param {any[]} nodes
 * @returns {string}
 */
export function treeKey(nodes) {
  return JSON.stringify(
    nodes.map((n) => [
      n.id,
      n.kind,
      n.messages,
      n.eventCount,
      Array.isArray(n.children) ? treeKey(n.children) : '',
    ]),
  );
}
