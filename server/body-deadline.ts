/**
 * Bounded connections (SPEC section 14): a request body must arrive whole within
 * `timeouts.bodyMs` of the request's headers. A client that trickles its body (or sends a length it
 * never fills) gets a 408 in the endpoint's format and its connection is closed, so slow bodies
 * cannot hold sockets and memory forever. The answer itself may take as long as the provider
 * needs: only the upload is timed.
 */
import type { Request, RequestHandler, Response } from 'express';
import { OdaError } from '../lib/errors.ts';
import { hasBody } from './content-type-guard.ts';
import { sendError } from './error-handler.ts';
import { requestSource, type LimitedLog } from './limited-log.ts';

/** Express middleware, early in the chain: arms a timer that fires unless the body has arrived. */
export function bodyDeadline(ms: number, log: LimitedLog): RequestHandler {
  return function armBodyDeadline(req: Request, res: Response, next) {
    if (req.complete || !hasBody(req.headers)) return next();
    const timer = setTimeout(() => onTimeout(req, res, ms, log), ms);
    timer.unref();
    const disarm = () => clearTimeout(timer);
    req.once('end', disarm);
    res.once('close', disarm);
    next();
  };
}

function onTimeout(req: Request, res: Response, ms: number, log: LimitedLog): void {
  if (req.complete) return;
  // Any client can send a head and no body: limited per team or address like other refusals.
  log.write({
    level: 'info',
    kind: 'ODA_ERR_BODY_TIMEOUT 408',
    source: requestSource(req, res),
    reqId: res.locals.requestId as string | undefined,
    fields: { ms },
    msg: 'request body did not arrive in time; closing',
  });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const err = new OdaError(
    'ODA_ERR_BODY_TIMEOUT',
    408,
    `the request body did not arrive within ${ms} ms (timeouts.bodyMs)`,
    { headers: { connection: 'close' } },
  );
  res.once('finish', () => req.socket.destroy());
  sendError(req, res, err);
}
