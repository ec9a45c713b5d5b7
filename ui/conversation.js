// @ts-check
/* global IntersectionObserver, document, requestAnimationFrame */
/**
 * One conversation (one chat log) as a timeline: messages as cards, and each model call's request,
 * decisions and response as rows with its usage and what the mechanisms saved. It opens on the
 * latest page of the log, loads earlier pages (offset/length reads) as the reader scrolls up, and
 * follows new events live through the tail route.
 */
import { el, replace } from './dom.js';
import { duration, num, time } from './format.js';
import { getJson, path } from './api.js';
import { followTail } from './live-tail.js';
import { messageBody, messageCard, Thumbnails } from './message.js';
import { readEvents, readReceived } from './event-reads.js';
import { noSavings, removedText, savingsText, trimRemovedChars, usageText } from './turn-figures.js';

/** Events per page read. */
export const PAGE = 300;

/**
 * @typedef {import('./event-reads.js').Received} Received
 * @typedef {import('./event-reads.js').LogEvent} LogEvent
 * @typedef {import('./turn-figures.js').Savings} Savings
 */

export class ConversationView {
  /**
   * @param {{ chatId: string, scroller: HTMLElement, list: HTMLElement, top: HTMLElement, live: HTMLElement, onEvents?: () => void, onRefused?: () => void, onGone?: () => void }} opts
   */
  constructor(opts) {
    /** Called when the live tail finds the chat gone. */
    this.onGone = opts.onGone;
    /** Called when the gateway refuses the key for the live tail. */
    this.onRefused = opts.onRefused;
    /** Called when live events arrive (the session's tree may have changed). */
    this.onEvents = opts.onEvents;
    this.chatId = opts.chatId;
    this.scroller = opts.scroller;
    this.list = opts.list;
    this.top = opts.top;
    this.live = opts.live;
    this.abort = new AbortController();
    this.thumbs = new Thumbnails(opts.chatId);
    /** First and one-past-last loaded event. */
    this.start = 0;
    this.end = 0;
    this.loadingEarlier = false;
    /** @type {Map<string, string>} the wire format of each request seen, by request id */
    this.formats = new Map();
    /** @type {Map<string, {usage: any, span: HTMLElement}>} usage of the responses shown, by request id */
    this.usageSpans = new Map();
    /** @type {Map<number, {event: LogEvent, card: HTMLElement, received: string}>} */
    this.cards = new Map();
    /** @type {Map<string, Savings>} */
    this.savings = new Map();
    /** @type {Map<string, HTMLElement>} */
    this.savingsRows = new Map();
    this.observer = new IntersectionObserver(() => void this.maybeLoadEarlier(), { root: this.scroller });
  }

  /**
   * Opens on the latest page and starts following the log.
   * @param {any} [known] the chat's `GET /v1/sessions/{id}` answer, when the caller has it already
   */
  async open(known) {
    replace(this.top);
    replace(this.list, el('p', 'muted', 'Loading…'));
    const detail = known ?? (await getJson(path`/v1/sessions/${this.chatId}`, this.abort.signal));
    const count = (detail.snapshot?.position ?? -1) + 1;
    this.start = Math.max(0, count - PAGE);
    this.end = this.start;
    replace(this.list);
    await this.loadPage(this.start, count, 'end');
    if (count === 0) replace(this.list, el('p', 'muted empty-log', 'No events yet.'));
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.observer.observe(this.top);
    void this.follow();
  }

  close() {
    this.abort.abort();
    this.observer.disconnect();
    this.thumbs.close();
  }

  /**
   * Loads earlier events while the top of the timeline is in view (or, `retry`, once wherever it is).
   * A page that fails to load leaves a message and a Retry button at the top.
   */
  async maybeLoadEarlier(retry = false) {
    if (this.loadingEarlier || this.start === 0 || this.abort.signal.aborted) return;
    if (!retry && this.scroller.scrollTop > 400) return;
    this.loadingEarlier = true;
    replace(this.top);
    try {
      const from = Math.max(0, this.start - PAGE);
      const before = this.scroller.scrollHeight - this.scroller.scrollTop;
      await this.loadPage(from, this.start, 'start');
      this.start = from;
      // Keep what the reader looks at in place.
      this.scroller.scrollTop = this.scroller.scrollHeight - before;
    } catch (err) {
      if (this.abort.signal.aborted) return;
      // The observer fires only when the top comes into view again: without a word and a way to try
      // again, a failed page would look like the start of the conversation.
      replace(
        this.top,
        el(
          'p',
          'error load-earlier-error',
          `Could not load earlier events: ${err instanceof Error ? err.message : String(err)} `,
          el(
            'button',
            {
              attrs: { type: 'button', class: 'retry-earlier' },
              on: { click: () => void this.maybeLoadEarlier(true) },
            },
            'Retry',
          ),
        ),
      );
      return;
    } finally {
      this.loadingEarlier = false;
    }
    if (this.start > 0 && this.scroller.scrollTop <= 400)
      requestAnimationFrame(() => void this.maybeLoadEarlier());
  }

  /**
   * @param {number} offset
   * @param {number} end
   * @param {'start' | 'end'} where
   */
  async loadPage(offset, end, where) {
    if (end <= offset) return;
    const signal = this.abort.signal;
    const [events, received] = await Promise.all([
      readEvents(this.chatId, offset, end, signal),
      readReceived(this.chatId, offset, end, signal),
    ]);
    if (signal.aborted) return;
    this.render(events, received, where);
    if (where === 'end' && events.length > 0)
      this.end = Math.max(this.end, events[events.length - 1].seq + 1);
  }

  /**
   * @param {LogEvent[]} events
   * @param {Map<number, Received>} received
   * @param {'start' | 'end'} where
   */
  render(events, received, where) {
    const touched = new Set();
    for (const e of events) {
      if (e.type === 'request' && typeof e.requestId === 'string' && typeof e.format === 'string') {
        this.formats.set(e.requestId, e.format);
        // A response drawn before its request (an earlier page loaded later) counts again now.
        const shown = this.usageSpans.get(e.requestId);
        if (shown) shown.span.textContent = ` · tokens: ${usageText(shown.usage, e.format)}`;
      }
    }
    for (const e of events) {
      const requestId = typeof e.requestId === 'string' ? e.requestId : undefined;
      if (!requestId) continue;
      const s = this.savings.get(requestId) ?? noSavings();
      if (e.type === 'tool-result-trimmed') {
        s.trims += 1;
        s.trimChars += trimRemovedChars(e);
      } else if (e.type === 'pruning') {
        s.soft += e.soft ?? 0;
        s.cleared += e.cleared ?? 0;
        s.prunedChars += e.charsRemoved ?? 0;
      } else if (e.type === 'image-set-aside') {
        s.setAside += 1;
      } else continue;
      this.savings.set(requestId, s);
      touched.add(requestId);
    }
    const fragment = document.createDocumentFragment();
    for (const e of events) fragment.append(this.row(e, received.get(e.seq)));
    if (where === 'start') this.list.prepend(fragment);
    else this.list.append(fragment);
    for (const requestId of touched) {
      const row = this.savingsRows.get(requestId);
      const s = this.savings.get(requestId);
      if (row && s) row.textContent = savingsText(s);
    }
  }

  /**
   * One event as a card or a row.
   * @param {LogEvent} e
   * @param {Received | undefined} received
   * @returns {HTMLElement}
   */
  row(e, received) {
    switch (e.type) {
      case 'message': {
        const card = messageCard(e, received, this.thumbs);
        this.cards.set(e.seq, { event: e, card, received: JSON.stringify(received ?? null) });
        return card;
      }
      case 'request':
        return el(
          'div',
          { attrs: { class: 'event request' }, data: { seq: e.seq } },
          el('span', 'icon', '→'),
          el('span', null, `Request to ${e.model} via ${e.provider} (${e.format})`),
          Array.isArray(e.tools) && e.tools.length > 0
            ? el('span', 'muted', ` · ${e.tools.length} tools`)
            : null,
          // The leading system prompt is logged by its digest only (SPEC section 6).
          typeof e.systemDigest === 'string'
            ? el(
                'span',
                { attrs: { class: 'muted system-prompt', title: `sha256 ${e.systemDigest}` } },
                ' · a system prompt (kept as its digest, not its text)',
              )
            : null,
          el('span', 'seq', `#${e.seq}`),
          el('time', null, time(e.at)),
        );
      case 'response': {
        const usage = el('span', 'usage', ` · tokens: ${usageText(e.usage, this.formats.get(e.requestId))}`);
        this.usageSpans.set(e.requestId, { usage: e.usage, span: usage });
        const savings = el('div', 'savings', savingsText(this.savings.get(e.requestId) ?? noSavings()));
        this.savingsRows.set(e.requestId, savings);
        return el(
          'div',
          { attrs: { class: `event response ${e.ok ? 'ok' : 'failed'}` }, data: { seq: e.seq } },
          el(
            'div',
            'response-line',
            el('span', 'icon', '←'),
            el(
              'span',
              null,
              `Response ${e.status}${e.ok ? '' : ' (failed)'}${e.model ? ` from ${e.model}` : ''}`,
            ),
            e.stopReason ? el('span', 'muted', ` · ${e.stopReason}`) : null,
            usage,
            el(
              'span',
              'muted',
              ` · ${e.attempts} attempt${e.attempts === 1 ? '' : 's'} · ${duration(e.latencyMs)}`,
            ),
            el('span', 'seq', `#${e.seq}`),
          ),
          e.error ? el('div', 'error', String(e.error)) : null,
          el('div', 'savings removed', removedText(e)),
          savings,
        );
      }
      case 'tool-result-trimmed':
        return el(
          'div',
          { attrs: { class: 'event decision' }, data: { seq: e.seq } },
          el('span', 'icon', '✂'),
          `Tool result ${e.callId} (${Array.isArray(e.parts) ? `${e.parts.length} text parts as one text` : `text part ${e.part}`}) trimmed ${e.trigger === 'overflow' ? 'after a context-overflow refusal' : 'at the compaction point'}: ${num(e.originalChars)} chars → first ${num(e.headChars)} + last ${num(e.tailChars)}`,
          el('span', 'seq', `#${e.seq}`),
        );
      case 'image-set-aside':
        return el(
          'div',
          { attrs: { class: 'event decision' }, data: { seq: e.seq } },
          el('span', 'icon', '▣'),
          `Image #${e.ordinal} set aside (round ${e.round}): `,
          el('span', 'note', String(e.note)),
          el('span', 'seq', `#${e.seq}`),
        );
      case 'pruning':
        return el(
          'div',
          { attrs: { class: 'event decision' }, data: { seq: e.seq } },
          el('span', 'icon', '✂'),
          `Pruning pass: ${e.soft} soft-trimmed, ${e.cleared} cleared, −${num(e.charsRemoved)} estimate chars (estimated ${num(e.estimateBefore)} → ${num(e.estimateAfter)} tokens)`,
          el('span', 'seq', `#${e.seq}`),
        );
      case 'tools-changed': {
        const added = (e.added ?? []).map((/** @type {any} */ a) => a.tool?.name).join(', ');
        const removed = (e.removed ?? []).map((/** @type {any} */ t) => t.name).join(', ');
        return el(
          'div',
          { attrs: { class: 'event tools' }, data: { seq: e.seq } },
          el('span', 'icon', '⚙'),
          `Tools changed${added ? `: added ${added}` : ''}${removed ? `${added ? ';' : ':'} removed ${removed}` : ''}`,
          el('span', 'seq', `#${e.seq}`),
        );
      }
      case 'compaction':
        return el(
          'div',
          { attrs: { class: 'event compaction' }, data: { seq: e.seq } },
          el('span', 'icon', '⇣'),
          `Compaction: the history (events #${e.replaced?.fromSeq}–#${e.replaced?.toSeq}) was replaced by a summary of ${e.messages} message${e.messages === 1 ? '' : 's'}`,
          el('span', 'seq', `#${e.seq}`),
        );
      default:
        return el(
          'div',
          { attrs: { class: 'event other' }, data: { seq: e.seq } },
          el('span', 'icon', '·'),
          `${e.type}: `,
          el('code', null, JSON.stringify(e)),
        );
    }
  }

  /**
   * @param {string} text
   * @param {'on' | 'off' | ''} how
   */
  setLive(text, how) {
    this.live.textContent = text;
    this.live.className = how ? `live ${how}` : 'live';
  }

  /** Follows the log through the tail route until closed or stopped for good (live-tail.js). */
  follow() {
    return followTail({
      chatId: this.chatId,
      signal: this.abort.signal,
      from: () => this.end,
      setLive: (text, how) => this.setLive(text, how),
      onEvents: (events) => void this.appendLive(events),
      onRefused: this.onRefused,
      onGone: this.onGone,
    });
  }

  /** @param {LogEvent[]} events */
  async appendLive(events) {
    const fresh = events.filter((e) => e.seq >= this.end);
    if (fresh.length === 0) return;
    this.onEvents?.();
    const atBottom = this.scroller.scrollHeight - this.scroller.scrollTop - this.scroller.clientHeight < 120;
    this.list.querySelector('.empty-log')?.remove();
    this.end = fresh[fresh.length - 1].seq + 1;
    this.render(fresh, new Map(), 'end');
    if (atBottom) this.scroller.scrollTop = this.scroller.scrollHeight;
    // A new request may change what the model received of recent messages (a set-aside, a trim,
    // a pruning pass, the image replay window): show their received forms again.
    const from = Math.max(this.start, this.end - PAGE);
    const received = await readReceived(this.chatId, from, this.end, this.abort.signal).catch(
      () => undefined,
    );
    if (!received) return;
    for (const [seq, entry] of this.cards) {
      if (seq < from) continue;
      const next = received.get(seq);
      const key = JSON.stringify(next ?? null);
      if (key === entry.received) continue;
      entry.received = key;
      entry.card
        .querySelector('.msg-body')
        ?.replaceWith(messageBody(entry.event.content ?? [], next, this.thumbs));
    }
  }
}
