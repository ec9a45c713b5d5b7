// @ts-check
/**
 * The live tail of a conversation: reads the tail route from where the timeline ends, hands each
 * batch of events on, and says on the live badge what it does. A refused key (401), a chat gone or
 * out of the key's sight (404, or the tail ending because the chat is gone), a foreign origin (403)
 * or a bad request (400) stop it, the 401 asking for a key; a drop, a refusal over the tail cap
 * or the key's rate (429), a log the gateway could not read or a gateway shutting down try again
 * after a wait that doubles up to 30 s, and never before the gateway's `retry-after`, the badge
 * saying when. While the gateway asks the page to wait (any read of the page refused with
 * `retry-after`), the tail connects once the wait is over, the badge saying so.
 */
import { ApiError, gatewayWait, path, readEventStream } from './api.js';
import { parseData, sleep } from './event-reads.js';

const RECONNECT_MS = 2000;
const RECONNECT_MAX_MS = 30_000;

/** @typedef {import('./event-reads.js').LogEvent} LogEvent */

/**
 * Follows chat `chatId` until `signal` aborts or the tail stops for good.
 * @param {{
 *   chatId: string, signal: AbortSignal, from: () => number,
 *   setLive: (text: string, how: 'on' | 'off' | '') => void,
 *   onEvents: (events: LogEvent[]) => void, onRefused?: () => void, onGone?: () => void,
 * }} opts `from` is where the timeline ends now (the next event it lacks)
 */
export async function followTail(opts) {
  const { chatId, signal, setLive } = opts;
  let wait = RECONNECT_MS;
  while (!signal.aborted) {
    let why = '';
    let gone = false;
    /** @type {number | undefined} the gateway's `retry-after`, when it is longer than the backoff */
    let asked;
    if (gatewayWait.held) {
      setLive(gatewayWait.said('Connecting', false), 'off');
      await gatewayWait.over(signal).catch(() => undefined);
      if (signal.aborted) return;
    }
    setLive('Connecting…', '');
    try {
      await readEventStream(path`/v1/sessions/${chatId}/tail?from=${opts.from()}`, signal, (m) => {
        if (m.event === 'ready') {
          setLive('● Live', 'on');
          wait = RECONNECT_MS;
        } else if (m.event === 'events') opts.onEvents(parseData(m.data).events ?? []);
        else if (m.event === 'error')
          why = `the gateway could not read the log: ${parseData(m.data).message ?? m.data}`;
        else if (m.event === 'end') {
          const reason = parseData(m.data).reason;
          if (reason === 'gone') gone = true;
          why = reason === 'shutdown' ? 'the gateway is shutting down' : `the tail ended (${m.data})`;
        }
      });
      why ||= 'the connection closed';
    } catch (err) {
      if (signal.aborted) return;
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof ApiError && err.status === 401) {
        setLive(`Not following: the key was refused (${message})`, 'off');
        opts.onRefused?.();
        return;
      }
      // The conversation was there when the page read it: a 404 now means it is gone (its log
      // removed), or no longer the key's to see.
      if (err instanceof ApiError && err.status === 404) {
        setLive(`Not following: the chat is gone (${message})`, 'off');
        opts.onGone?.();
        return;
      }
      if (err instanceof ApiError && (err.status === 403 || err.status === 400)) {
        setLive(`Not following: ${message}`, 'off');
        return;
      }
      if (err instanceof ApiError && err.status === 429) {
        why =
          err.code === 'ODA_ERR_RATE_LIMITED'
            ? `the key is over its requests per minute (${message})`
            : `too many live tails open for this key (${message})`;
        wait = Math.max(wait, 2 * RECONNECT_MS);
      } else why = message;
      // Never sooner than the gateway asks (a 429's or a draining gateway's 503 `retry-after`).
      const retryAfter = err instanceof ApiError ? err.retryAfterMs : undefined;
      if (retryAfter !== undefined && retryAfter > wait) wait = asked = retryAfter;
    }
    if (signal.aborted) return;
    if (gone) {
      setLive('Not following: the chat is gone (its log was removed)', 'off');
      opts.onGone?.();
      return;
    }
    const askedText = asked === undefined ? '' : ' (as the gateway asked)';
    setLive(`Reconnecting in ${Math.ceil(wait / 1000)} s${askedText}: ${why}`, 'off');
    await sleep(wait, signal);
    wait = Math.min(wait * 2, RECONNECT_MAX_MS);
  }
}
