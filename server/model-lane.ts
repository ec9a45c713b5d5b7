/**
 * The model calls' lane: a POST to `/v1/messages`, `/v1/chat/completions` or `/v1/responses` (and its
 * `/compact`), the
 * gateway's hot path, runs the same middleware in the same order and then its handler, called one
 * after the other here instead of through Express's dispatch, which would build a final handler,
 * start the router and walk the layers and nested routers of every other route (health, metrics, the
 * API description, the log viewer), matching each path on the way. The request and response get what
 * Express gives every request first (its request and response methods, `res.locals`), and errors
 * reach the same error handler. Every other request, and any other spelling of these paths (a
 * trailing slash, another case), goes through Express as before, where the same routes are mounted.
 */
import type { Express, ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OdaError } from '../lib/errors.ts';
import { cutShort } from './cut-short.ts';

/** `res.locals.route`: the route a request was served by, for the request metrics. */
export const LANE_ROUTE = 'route';

type Dispatch = (req: IncomingMessage, res: ServerResponse, callback?: NextFunction) => void;

/**
 * Puts the lane in front of `app`'s dispatch (`app.handle`, what the app does for every request of
 * every server it is given to, `app.listen` or `http.createServer(app)` alike): POSTs to `routes`'
 * exact paths run `chain` and then their handler; everything else goes to Express.
 */
export function mountModelLane(
  app: Express,
  routes: ReadonlyMap<string, RequestHandler>,
  chain: readonly RequestHandler[],
  onError: ErrorRequestHandler,
): void {
  const target = app as unknown as { handle: Dispatch; request: object; response: object };
  const viaExpress = target.handle.bind(app);
  // Each route's whole run, made once: the chain, then the route's handler.
  const runs = new Map([...routes].map(([path, handler]) => [path, [...chain, handler]] as const));
  target.handle = function handle(req, res, callback) {
    const path = callback === undefined && req.method === 'POST' ? pathOf(req.url) : undefined;
    const run = path === undefined ? undefined : runs.get(path);
    if (!run) return viaExpress(req, res, callback);
    // What Express sets up for every request before its router runs.
    const r = req as unknown as Request & { res: Response };
    const s = res as unknown as Response & { req: Request };
    r.res = s;
    s.req = r;
    Object.setPrototypeOf(req, target.request);
    Object.setPrototypeOf(res, target.response);
    s.locals ??= Object.create(null) as Record<string, unknown>;
    s.locals[LANE_ROUTE] = path;
    runChain(r, s, run, onError);
  };
}

function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** Runs `fns` in order as Express would: each goes on by calling `next()`, stops with `next(err)`. */
function runChain(req: Request, res: Response, fns: readonly RequestHandler[], onError: ErrorRequestHandler) {
  let i = 0;
  // After the error handler nothing is left to run: a response it could not finish is closed.
  const last: NextFunction = () => {
    if (!res.writableEnded) cutShort(res, 'error');
  };
  const fail = (err: unknown) => {
    try {
      onError(err, req, res, last);
    } catch {
      // The error handler itself failed: nothing else can answer, so the response is closed.
      last();
    }
  };
  const next: NextFunction = (err?: unknown) => {
    if (err !== undefined && err !== null && err !== 'route' && err !== 'router') return fail(err);
    const fn = fns[i++];
    // A handler that passes the request on: nothing else serves this path and method.
    if (!fn)
      return fail(new OdaError('ODA_ERR_NOT_FOUND', 404, `the gateway does not serve POST ${req.path}`));
    try {
      const ret = fn(req, res, next) as unknown;
      if (ret instanceof Promise)
        ret.then(undefined, (e: unknown) => fail(e ?? new Error('Rejected promise')));
    } catch (e) {
      fail(e);
    }
  };
  next();
}
