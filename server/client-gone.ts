/**
 * The end of a call whose client went away before its answer was whole. A large body's checks take
 * turns of the event loop (so other requests go on meanwhile), and the client may leave during
 * them: its `close` has then already been emitted when the call starts, so listening for it alone
 * would leave the call running upstream, outside its team's share, for nobody.
 */
import type { Response } from 'express';

/** An abort controller that aborts when the client is gone before the answer is whole, or already is. */
export function abortWhenClientGone(res: Response): AbortController {
  const abort = new AbortController();
  const gone = () => {
    if (!res.writableFinished) abort.abort();
  };
  if (isClientGone(res)) gone();
  else res.on('close', gone);
  return abort;
}

/** True when the response can no longer reach the client (closed, or its socket destroyed). */
export function isClientGone(res: Response): boolean {
  return res.closed || res.destroyed;
}
