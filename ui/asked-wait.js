// @ts-check
/**
 * The page's own reads (the sessions list, the open session) while the gateway asks the page to
 * wait (`page-wait.js`): a read held by the wait says so in its place and goes once the wait is
 * over, unless a later one (another click, another session picked) took its place meanwhile; a
 * read refused with such a wait is made again then. The live tail says so on its badge
 * (`live-tail.js`).
 */
import { ApiError, gatewayWait } from './api.js';

/**
 * True when `err` asked the page to wait (a 429 or 503 with `retry-after`): the read it refused is
 * made again once the wait is over, at once when it asked for none (`retry-after: 0`, or a date
 * already past), not shown as an error.
 * @param {unknown} err
 */
export function asksWait(err) {
  return (
    err instanceof ApiError && (err.status === 429 || err.status === 503) && err.retryAfterMs !== undefined
  );
}

/**
 * Waits out the page's wait, if there is one, saying so with `say` ("Reading the sessions again
 * in 40 s (as the gateway asked): …"). Resolves false when the read is no longer wanted once the
 * wait is over (`stale`), true when it may go.
 * @param {string} reading what waits, as the page says it ("Reading the sessions")
 * @param {boolean} again the read was itself refused
 * @param {(text: string) => void} say
 * @param {() => boolean} stale
 */
export async function afterAskedWait(reading, again, say, stale) {
  if (!gatewayWait.held) return !stale();
  say(gatewayWait.said(reading, again));
  await gatewayWait.over();
  return !stale();
}
