// @ts-check
/**
 * The log viewer's reads of a chat log: pages of its events and the received forms of its changed
 * messages (offset/length reads that follow the route's next offset), a tail event's JSON data,
 * and a wait that stops early when aborted.
 */
import { getJson, path } from './api.js';

/**
 * @typedef {import('./message.js').Received} Received
 * @typedef {{ seq: number, at: number, type: string, [field: string]: any }} LogEvent
 */

/**
 * An SSE event's JSON data, or an empty object when it is not JSON.
 * @param {string} data
 * @returns {any}
 */
export function parseData(data) {
  try {
    return JSON.parse(data) ?? {};
  } catch {
    return {};
  }
}

/**
 * Waits `ms`, or less when `signal` aborts.
 * @param {number} ms
 * @param {AbortSignal} signal
 */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve(undefined);
    }
  });
}

/**
 * Reads events [offset, end) of a chat, following the route's next offset (it answers a bounded
 * number of events per call).
 * @param {string} chatId
 * @param {number} offset
 * @param {number} end
 * @param {AbortSignal} signal
 * @returns {Promise<LogEvent[]>}
 */
export async function readEvents(chatId, offset, end, signal) {
  /** @type {LogEvent[]} */
  const out = [];
  let at = offset;
  while (at < end) {
    const body = await getJson(path`/v1/sessions/${chatId}/events?offset=${at}&length=${end - at}`, signal);
    const events = /** @type {LogEvent[]} */ (body.events ?? body.data ?? []);
    out.push(...events);
    const next =
      typeof body.next_offset === 'number'
        ? body.next_offset
        : typeof body.next === 'number'
          ? body.next
          : at + events.length;
    if (events.length === 0 || next <= at) break;
    at = next;
  }
  return out;
}

/**
 * The received forms of the changed messages among events [offset, end).
 * @param {string} chatId
 * @param {number} offset
 * @param {number} end
 * @param {AbortSignal} signal
 * @returns {Promise<Map<number, Received>>}
 */
export async function readReceived(chatId, offset, end, signal) {
  /** @type {Map<number, Received>} */
  const out = new Map();
  let at = offset;
  while (at < end) {
    const body = await getJson(path`/v1/sessions/${chatId}/received?offset=${at}&length=${end - at}`, signal);
    for (const m of body.data ?? []) out.set(m.seq, m);
    if (typeof body.next_offset !== 'number' || body.next_offset <= at) break;
    at = body.next_offset;
  }
  return out;
}
