// @ts-check
/* global TextDecoderStream, fetch, sessionStorage */
/**
 * The page's only way to the gateway: same-origin fetch() with the caller's key in a header. The
 * key is kept in sessionStorage (this tab only, gone when it closes) and is never put in a URL.
 * The live tail reads server-sent events through fetch() streaming, because EventSource cannot
 * send a header. A wait the gateway asks (a 429 or 503 with `retry-after`) holds every read of
 * the page until it is over (`gatewayWait`).
 */
import { PageWait } from './page-wait.js';

const KEY_ITEM = 'oda.ui.key';

/** The longest wait a `retry-after` may ask for (a day): a timer cannot wait much longer. */
const RETRY_AFTER_MAX_MS = 24 * 3600 * 1000;

/** An answer other than 2xx, with the gateway's error message, code and asked wait. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} message
   * @param {{ code?: string, retryAfterMs?: number }} [more] the error's `code`, and how long
   *   the gateway asked the page to wait before trying again (`retry-after`)
   */
  constructor(status, message, more = {}) {
    super(message);
    this.status = status;
    this.code = more.code;
    this.retryAfterMs = more.retryAfterMs;
  }
}

/**
 * The wait a `retry-after` header asks for (seconds, or an HTTP date), in ms; undefined without one.
 * @param {string | null} value
 */
export function retryAfterMs(value) {
  if (value === null) return undefined;
  const text = value.trim();
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text) - Date.now();
  if (Number.isNaN(ms)) return undefined;
  return Math.min(Math.max(0, ms), RETRY_AFTER_MAX_MS);
}

/** @returns {string | null} */
export function storedKey() {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

/** @param {string | null} key */
export function storeKey(key) {
  try {
    if (key) sessionStorage.setItem(KEY_ITEM, key);
    else sessionStorage.removeItem(KEY_ITEM);
  } catch {
    // Storage refused (private mode): the key lives only as long as this page.
  }
  memoryKey = key;
}

/**
 * The first character a key cannot have (keys are printable ASCII; a header cannot carry other
 * characters), as `U+XXXX`, or undefined when the key is all printable ASCII.
 * @param {string} key
 */
export function badKeyChar(key) {
  for (const ch of key) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp < 0x21 || cp > 0x7e) return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return undefined;
}

/** @type {string | null} */
let memoryKey = storedKey();

/**
 * The page's one wait the gateway asked for: every read below waits it out first, and every
 * answer asking for one sets it, whichever read it answered.
 */
export const gatewayWait = new PageWait();

/**
 * The key header. A stored key that cannot be sent (a character outside printable ASCII) is
 * answered like a key the gateway refused, a 401, so the page asks for another.
 * @returns {Record<string, string>}
 */
function headers() {
  if (!memoryKey) return {};
  const bad = badKeyChar(memoryKey);
  if (bad) throw new ApiError(401, `the key has a character a key cannot have (${bad})`);
  return { authorization: `Bearer ${memoryKey}` };
}

/**
 * A path under the gateway with its id segments encoded.
 * @param {TemplateStringsArray} strings
 * @param {...(string | number)} values
 */
export function path(strings, ...values) {
  return strings.reduce(
    (out, s, i) => out + s + (i < values.length ? encodeURIComponent(String(values[i])) : ''),
    '',
  );
}

/**
 * @param {Response} res
 * @returns {Promise<never>}
 */
async function fail(res) {
  let message = `${res.status} ${res.statusText}`;
  /** @type {string | undefined} */
  let code;
  try {
    const body = await res.json();
    const m = body?.error?.message;
    if (typeof m === 'string') message = m;
    if (typeof body?.error?.code === 'string') code = body.error.code;
  } catch {
    // not JSON
  }
  const wait = retryAfterMs(res.headers.get('retry-after'));
  if ((res.status === 429 || res.status === 503) && wait !== undefined) {
    const rateLimited = code === 'ODA_ERR_RATE_LIMITED';
    gatewayWait.ask(wait, rateLimited ? `the key is over its requests per minute (${message})` : message);
  }
  throw new ApiError(res.status, message, { code, retryAfterMs: wait });
}

/**
 * GET a JSON answer of the gateway.
 * @param {string} url a same-origin path
 * @param {AbortSignal} [signal]
 * @returns {Promise<any>}
 */
export async function getJson(url, signal) {
  await gatewayWait.over(signal);
  const res = await fetch(url, { headers: headers(), signal, cache: 'no-store', credentials: 'omit' });
  if (!res.ok) return fail(res);
  return res.json();
}

/**
 * GET bytes (an attachment) as a Blob.
 * @param {string} url
 * @returns {Promise<Blob>}
 */
export async function getBlob(url) {
  await gatewayWait.over();
  const res = await fetch(url, { headers: headers(), credentials: 'omit' });
  if (!res.ok) return fail(res);
  return res.blob();
}

/**
 * Reads a server-sent event stream with fetch() until it ends or `signal` aborts; each event
 * (name, data, id) is handed to `onEvent`.
 * @param {string} url
 * @param {AbortSignal} signal
 * @param {(event: {event: string, data: string, id: string | undefined}) => void} onEvent
 */
export async function readEventStream(url, signal, onEvent) {
  await gatewayWait.over(signal);
  const res = await fetch(url, {
    headers: { ...headers(), accept: 'text/event-stream' },
    signal,
    cache: 'no-store',
    credentials: 'omit',
  });
  if (!res.ok || !res.body) return fail(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    for (;;) {
      const m = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
      if (!m) break;
      const block = buffer.slice(0, m.index);
      buffer = buffer.slice(m.index + m[0].length);
      let event = 'message';
      /** @type {string | undefined} */
      let id;
      const data = [];
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        let v = colon === -1 ? '' : line.slice(colon + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'event') event = v;
        else if (field === 'data') data.push(v);
        else if (field === 'id') id = v;
      }
      if (data.length > 0) onEvent({ event, data: data.join('\n'), id });
    }
  }
}
