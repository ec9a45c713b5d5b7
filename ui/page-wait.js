// @ts-check
/* global DOMException */
/**
 * The one wait the gateway asks of the page: a 429 (the key over its requests per minute, too many
 * calls in flight) or a 503 (a gateway shutting down, its store out of reach) with `retry-after`,
 * to whichever of the page's reads it answered, holds every read the page makes of the gateway
 * until it is over (`api.js` waits it out before each). One wait, not one per read: the sessions
 * list refused does not leave the open session's reads going out meanwhile, nor the other way round.
 */

export class PageWait {
  constructor() {
    /** When the wait is over (ms since the epoch); 0: none asked. */
    this.until = 0;
    /** Why the gateway asked for it, in words. */
    this.why = '';
  }

  /** The ms left of the wait, 0 when there is none. */
  left() {
    return Math.max(0, this.until - Date.now());
  }

  /** True while the page waits as the gateway asked. */
  get held() {
    return this.left() > 0;
  }

  /**
   * The gateway asked the page to wait `ms` (a longer wait asked earlier stands).
   * @param {number} ms
   * @param {string} why
   */
  ask(ms, why) {
    const until = Date.now() + ms;
    if (until <= this.until) return;
    this.until = until;
    this.why = why;
  }

  /**
   * Resolves once the wait is over (at once when there is none; later when it is made longer
   * meanwhile); rejects with an AbortError, as fetch() does, when `signal` aborts first.
   * @param {AbortSignal} [signal]
   * @returns {Promise<void>}
   */
  async over(signal) {
    for (;;) {
      if (signal?.aborted) throw new DOMException('The read was aborted.', 'AbortError');
      const ms = this.left();
      if (ms === 0) return;
      await new Promise((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          resolve(undefined);
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener('abort', done, { once: true });
      });
    }
  }

  /**
   * What the page says while a read waits: "Reading the sessions again in 40 s (as the gateway
   * asked): …"; `again` for a read that was itself refused.
   * @param {string} reading what waits, as the page says it ("Reading the sessions")
   * @param {boolean} again
   */
  said(reading, again) {
    return `${reading}${again ? ' again' : ''} in ${Math.ceil(this.left() / 1000)} s (as the gateway asked): ${this.why}`;
  }
}
