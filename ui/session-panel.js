// @ts-check
/**
 * The open session's panel above its turns: its summary, the tree of its conversations, and the
 * line that says its reads wait as the gateway asked. A refresh that finds the summary's values or
 * the tree's ids and counts the same draws nothing again (an unfolded "All read-model values"
 * stays unfolded when it is drawn again).
 */
import { el, replace } from './dom.js';
import { sessionSummary } from './session-summary.js';
import { conversationTree, treeKey, treeList } from './session-tree.js';

/** @typedef {import('./sessions.js').Summary} Summary */

export class SessionPanel {
  /**
   * @param {{ summary: HTMLElement, tree: HTMLElement, wait: HTMLElement }} parts
   * @param {() => Summary[]} items the list page shown (a tree without the route's `conversations`
   *   is made from it)
   * @param {(session: string, chat: string) => void} go shows a conversation picked in the tree
   */
  constructor(parts, items, go) {
    this.parts = parts;
    this.items = items;
    this.go = go;
    /** The tree shown, as its ids and counts. */
    this.treeShown = '';
    /** The values the summary shown was drawn from. */
    this.summaryShown = '';
  }

  /**
   * Draws the session's tree with the conversation shown selected; `ifChanged`: only when its ids
   * or counts differ from the tree shown.
   * @param {any} detail a `GET /v1/sessions/{id}` answer of the session
   * @param {string} session
   * @param {string} selected
   * @param {boolean} [ifChanged]
   */
  showTree(detail, session, selected, ifChanged = false) {
    const nodes = conversationTree(detail, this.items());
    const key = treeKey(nodes);
    if (ifChanged && key === this.treeShown) return;
    this.treeShown = key;
    replace(this.parts.tree, el('h3', null, 'Conversations'), treeList(nodes, session, selected, this.go));
  }

  /**
   * Draws the session's summary, unless it is the one shown already; `keepFold` keeps the fold of
   * every read-model value open if it is (a redraw while the reader looks at it).
   * @param {any} detail a `GET /v1/sessions/{id}` answer of the session
   * @param {boolean} [keepFold]
   */
  showSummary(detail, keepFold = false) {
    const key = JSON.stringify([detail.header, detail.snapshot?.values, detail.usage, detail.savings]);
    if (key === this.summaryShown) return;
    const { summary } = this.parts;
    const open = keepFold && summary.querySelector('details')?.open === true;
    this.summaryShown = key;
    replace(summary, sessionSummary(detail));
    const fold = summary.querySelector('details');
    if (open && fold) fold.open = true;
  }

  /** Shows no summary and no tree (a session that could not be shown). */
  clear() {
    replace(this.parts.summary);
    this.summaryShown = '';
    replace(this.parts.tree);
  }

  /**
   * Says above the session that its reads wait as the gateway asked (`text`), or nothing (`''`).
   * @param {string} text
   */
  say(text) {
    this.parts.wait.textContent = text;
    this.parts.wait.hidden = text === '';
  }
}
