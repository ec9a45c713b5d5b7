/**
 * The model calls' lane: a POST to `/v1/messages`, `/v1/chat/completions` or `/v1/responses`, the
 * gateway's hot path, runs the same middleware in the same order and then its handler, called one
 * after the other here instead of through Express's router, which would walk the layers and nested
 * routers of every other route (health, metrics, the API description, the log viewer) and match
 * each path on the way. Errors reach the same error handler. Every other request, and any other
 * spelling of these paths (a trailing slash, another case), goes through the router as before, where
 * the same routes are mounted.
 */
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';

/** `res.locals.route`: the route a request was served by, for the request metrics. */
export const LANE_ROUTE = 'route';

/** Express middleware, mounted first: serves POSTs to `routes`' exact paths through `chain`. */
export function modelLane(
  routes: ReadonlyMap<string, RequestHandler>,
  chain: readonly RequestHandler[],
  onError: ErrorRequestHandler,
): RequestHandler {
  return function modelCallLane(req: Request, res: Response, out: NextFunction) {
    if (req.method !== 'POST') return out();
    const q = req.url.indexOf('?');
    const path = q === -1 ? req.url : req.url.slice(0, q);
    const handler = routes.get(path);
    if (!handler) return out();
    res.locals[LANE_ROUTE] = path;
    let i = 0;
    const fail = (err: unknown) => onError(err, req, res, out);
    const next: NextFunction = (err?: unknown) => {
      if (err !== undefined && err !== null && err !== 'route' && err !== 'router') return fail(err);
      const fn = i < chain.length ? chain[i++]! : i++ === chain.length ? handler : undefined;
      if (!fn) return out();
      try {
        const ret = fn(req, res, next) as unknown;
        if (ret instanceof Promise)
          ret.then(undefined, (e: unknown) => fail(e ?? new Error('Rejected promise')));
      } catch (e) {
        fail(e);
      }
    };
    next();
  };
}
