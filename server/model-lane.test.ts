import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { mountModelLane, LANE_ROUTE } from './model-lane.ts';
import { OdaError } from '../lib/errors.ts';

describe('mountModelLane', () => {
  const seen: string[] = [];
  let viaRouter = 0;
  let server: Server;
  let url: string;

  before(async () => {
    const app = express();
    const chain: RequestHandler[] = [
      (req, _res, next) => {
        seen.push(`first ${req.path}`);
        next();
      },
      (req, _res, next) => {
        if (req.get('x-refuse')) throw new OdaError('ODA_ERR_FORBIDDEN', 403, 'refused in the chain');
        seen.push('second');
        next();
      },
    ];
    const onError: ErrorRequestHandler = (err, req, res, _next) => {
      if (req.get('x-error-handler-throws')) throw new Error('the error handler failed');
      const e = err as OdaError;
      res.status(e.status).json({ error: e.message, route: res.locals[LANE_ROUTE] as string });
    };
    const answer: RequestHandler = (req, res) => {
      res
        .status(200)
        .json({ lane: res.locals[LANE_ROUTE] as string, query: req.query, app: req.app === app });
    };
    const passOn: RequestHandler = (_req, _res, next) => next();
    const rejects: RequestHandler = () => Promise.reject(new OdaError('ODA_ERR_INTERNAL', 500, 'went wrong'));
    mountModelLane(
      app,
      new Map([
        ['/lane', answer],
        ['/passes-on', passOn],
        ['/rejects', rejects],
      ]),
      chain,
      onError,
    );
    app.use((_req, _res, next) => {
      viaRouter++;
      next();
    });
    app.all('/lane', (_req, res) => {
      res.status(200).json({ router: true });
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('a POST to an exact lane path runs the chain in order, then its handler, with Express methods and no router', async () => {
    seen.length = 0;
    const before = viaRouter;
    const res = await fetch(`${url}/lane?x=1`, { method: 'POST' });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { lane: '/lane', query: { x: '1' }, app: true });
    assert.deepEqual(seen, ['first /lane', 'second']);
    assert.equal(viaRouter, before, 'the router never saw the request');
  });

  test('other methods and spellings go through Express', async () => {
    seen.length = 0;
    const before = viaRouter;
    for (const [method, path] of [
      ['GET', '/lane'],
      ['POST', '/lane/'],
      ['POST', '/LANE'],
    ] as const) {
      const res = await fetch(`${url}${path}`, { method });
      assert.deepEqual(await res.json(), { router: true }, `${method} ${path}`);
    }
    assert.deepEqual(seen, []);
    assert.equal(viaRouter, before + 3);
  });

  test('a throw in the chain, a rejected handler and a handler that passes the request on reach the error handler', async () => {
    const refused = await fetch(`${url}/lane`, { method: 'POST', headers: { 'x-refuse': '1' } });
    assert.equal(refused.status, 403);
    assert.deepEqual(await refused.json(), { error: 'refused in the chain', route: '/lane' });
    const rejected = await fetch(`${url}/rejects`, { method: 'POST' });
    assert.equal(rejected.status, 500);
    assert.deepEqual(await rejected.json(), { error: 'went wrong', route: '/rejects' });
    const passed = await fetch(`${url}/passes-on`, { method: 'POST' });
    assert.equal(passed.status, 404);
    assert.deepEqual(await passed.json(), {
      error: 'the gateway does not serve POST /passes-on',
      route: '/passes-on',
    });
  });

  test('an error handler that throws closes the response and the server goes on', async () => {
    // A throw in the chain, and a rejected handler (the chain lets it through), each reach an error
    // handler that throws.
    for (const [path, refuse] of [
      ['/lane', true],
      ['/rejects', false],
    ] as const) {
      const headers = { ...(refuse ? { 'x-refuse': '1' } : {}), 'x-error-handler-throws': '1' };
      // Closed, not left hanging (the timeout's AbortError is not the TypeError of a closed socket).
      const signal = AbortSignal.timeout(5000);
      await assert.rejects(fetch(`${url}${path}`, { method: 'POST', headers, signal }), TypeError, path);
    }
    const ok = await fetch(`${url}/lane`, { method: 'POST' });
    assert.equal(ok.status, 200);
  });
});
