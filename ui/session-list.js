// @ts-check
/**
 * The sessions list as the page shows it: its filters, its pages (Older, Newest) and their
 * numbering, and the rule that only the answer to the latest query is drawn. Answers can come
 * back out of order (a slow unfiltered page, then a quick filtered one): an earlier query's late
 * answer, or its failure, is dropped. While the gateway asks the page to wait (a 429 or 503 with
 * `retry-after`, to this list or any other read of the page) the list is not read: a read refused
 * so is made again once the wait is over, and a page asked for meanwhile (Newest, Older, Filter)
 * goes then, the latest one only; the page says so.
 */
import { ApiError, gatewayWait } from './api.js';
import { afterAskedWait, asksWait } from './asked-wait.js';
import { listSessions, renderSessions } from './sessions.js';

/**
 * @typedef {import('./sessions.js').Summary} Summary
 * @typedef {import('./sessions.js').Filters} Filters
 */

export class SessionList {
  /**
   * @param {{
   *   form: HTMLFormElement, q: HTMLInputElement, team: HTMLInputElement, from: HTMLInputElement,
   *   to: HTMLInputElement, list: HTMLElement, pageFirst: HTMLButtonElement,
   *   pageNext: HTMLButtonElement, pageInfo: HTMLElement,
   *   selected: () => string | undefined, open: (id: string) => void, onShown: () => void,
   *   onRefused: () => void, onError: (err: unknown) => void, onWait: (text: string) => void,
   * }} opts `onWait` says that the list waits as the gateway asked, and when it is read again
   */
  constructor(opts) {
    this.opts = opts;
    /** @type {Summary[]} the sessions shown */
    this.items = [];
    /** @type {(string | undefined)[]} cursors of the pages up to the one shown, for "Newest" and its number */
    this.cursors = [undefined];
    /** @type {string | undefined} where the page after the one shown starts */
    this.nextCursor = undefined;
    /** The filters of the page shown, which its next cursor belongs to. */
    this.shownFilters = this.typed();
    /** The filters of the latest first page asked for: a refresh reads it again with them. */
    this.askedFilters = this.shownFilters;
    /** Queries made so far: an answer is drawn only when its query is still the latest. */
    this.query = 0;
    /** Queries not answered yet (waiting for the gateway's wait to be over included). */
    this.pending = 0;
    opts.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.first().catch(opts.onError);
    });
    opts.pageNext.addEventListener('click', () => {
      if (!this.nextCursor) return;
      void this.load(this.shownFilters, this.nextCursor, [...this.cursors, this.nextCursor]).catch(
        opts.onError,
      );
    });
    // "Newest" goes back to the first page, or reads it again when it is shown.
    opts.pageFirst.addEventListener('click', () => {
      void (this.onFirstPage() ? this.refresh() : this.first()).catch(opts.onError);
    });
  }

  /** @returns {Filters} the filters as typed now */
  typed() {
    const { q, team, from, to } = this.opts;
    return { q: q.value.trim(), team: team.value.trim(), from: from.value, to: to.value };
  }

  /** True while the first page is shown. */
  onFirstPage() {
    return this.cursors.length === 1;
  }

  /** Loads the first page with the filters as typed now; a refused filter lists nothing. */
  first() {
    return this.load(this.typed(), undefined, [undefined], true);
  }

  /**
   * Reads the first page again with the filters it was asked with (not ones typed since). A
   * `background` refresh (a timer's) leaves a query under way to answer: it never drops the page
   * a person asked for; nor does it read while the list waits as the gateway asked.
   */
  async refresh(background = false) {
    if (background && (this.pending > 0 || gatewayWait.held)) return true;
    return this.load(this.askedFilters, undefined, [undefined]);
  }

  /** Draws the list again with `selected()` marked. */
  redraw() {
    if (this.items.length > 0) this.draw(this.items);
  }

  /** @param {Summary[]} items */
  draw(items) {
    renderSessions(this.opts.list, items, this.opts.selected(), this.opts.open);
  }

  /**
   * Loads the page that starts at `cursor` and shows it if no later query was made meanwhile. A 401
   * asks for a key (false); a refused `fresh` filter lists nothing rather than the page before it.
   * While the gateway asks the page to wait, the read waits (saying so) and then goes, unless
   * another query was made meanwhile; one refused with such a wait (429, 503 with `retry-after`)
   * is made again once the wait is over.
   * @param {Filters} filters
   * @param {string | undefined} cursor
   * @param {(string | undefined)[]} cursors the pages up to this one once it is shown
   * @param {boolean} [fresh] filters asked for now (not a page or a refresh of the list shown)
   * @returns {Promise<boolean>} false when the key was refused
   */
  async load(filters, cursor, cursors, fresh = false) {
    const query = ++this.query;
    if (cursor === undefined) this.askedFilters = filters;
    this.pending += 1;
    try {
      for (let again = false; ; again = true) {
        const stale = () => query !== this.query;
        if (!(await afterAskedWait('Reading the sessions', again, this.opts.onWait, stale))) return true;
        const shown = await this.read(query, filters, cursor, cursors, fresh);
        if (shown !== 'wait') return shown;
      }
    } finally {
      this.pending -= 1;
    }
  }

  /**
   * One read of `load`: 'wait' when the gateway asked the page to wait (read again once it is over).
   * @param {number} query
   * @param {Filters} filters
   * @param {string | undefined} cursor
   * @param {(string | undefined)[]} cursors
   * @param {boolean} fresh
   * @returns {Promise<boolean | 'wait'>}
   */
  async read(query, filters, cursor, cursors, fresh) {
    const { pageNext, pageInfo } = this.opts;
    try {
      const page = await listSessions(filters, cursor);
      if (query !== this.query) return true;
      this.opts.onShown();
      this.items = page.items;
      this.nextCursor = page.nextCursor;
      this.cursors = cursors;
      this.shownFilters = filters;
      this.draw(page.items);
      pageNext.disabled = !page.hasMore;
      // A gateway still building its chat index after a restart lists what it has indexed so far.
      pageInfo.textContent = `page ${cursors.length}${page.indexing ? ' · still indexing' : ''}`;
      return true;
    } catch (err) {
      if (query !== this.query) return !(err instanceof ApiError && err.status === 401);
      if (err instanceof ApiError && err.status === 401) {
        this.opts.onRefused();
        return false;
      }
      if (fresh) {
        this.items = [];
        this.nextCursor = undefined;
        this.cursors = [undefined];
        this.shownFilters = filters;
        this.draw([]);
        pageNext.disabled = true;
      }
      if (asksWait(err)) return 'wait';
      throw err;
    }
  }
}
