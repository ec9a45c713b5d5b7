// @ts-check
/**
 * The wait the gateway asks of a read the page makes on its own: a 429 (the key over its requests
 * per minute, too many calls in flight) or a 503 (a gateway shutting down, its store out of reach)
 * with `retry-after`. The sessions list and the open session's reads are not made again before
 * that wait is over, and the page says so, as the live tail does on its badge (`live-tail.js`).
 */
import { ApiError } from './api.js';

/**
 * The wait `err` asks for before the read is made again, and its cause in words; undefined when
 * it is not a 429 or 503 with `retry-after`.
 * @param {unknown} err
 * @returns {{ ms: number, why: string } | undefined}
 */
function askedWait(err) {
  if (!(err instanceof ApiError) || err.retryAfterMs === undefined) return undefined;
  if (err.status !== 429 && err.status !== 503) return undefined;
  const why =
    err.code === 'ODA_ERR_RATE_LIMITED'
      ? `the key is over its requests per minute (${err.message})`
      : err.message;
  return { ms: err.retryAfterMs, why };
}

/**
 * One of the page's own reads while the gateway asks it to wait: `hold` says so ("Reading the
 * sessions again in 40 s (as the gateway asked): …") and makes the read again once the wait is
 * over; `held` is true until then, so the read's timer leaves it alone.
 */
export class WaitAsked {
  /**
   * @param {string} reading what is read again, as the page says it ("Reading the sessions")
   * @param {(text: string) => void} say shows the page's words
   */
  constructor(reading, say) {
    this.reading = reading;
    this.say = say;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.timer = undefined;
  }

  /** True while the read waits as the gateway asked. */
  get held() {
    return this.timer !== undefined;
  }

  /**
   * A read failed with `err`: when it asks for a wait, says so and runs `again` once it is over
   * (a wait asked earlier is replaced). False when `err` asks for none.
   * @param {unknown} err
   * @param {() => void} again
   */
  hold(err, again) {
    const wait = askedWait(err);
    if (!wait) return false;
    this.say(`${this.reading} again in ${Math.ceil(wait.ms / 1000)} s (as the gateway asked): ${wait.why}`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      again();
    }, wait.ms);
    return true;
  }

  /** A read was answered: a read still waiting to be made again has no cause left. */
  answered() {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
