/**
 * The Express floor: what Express 5 itself costs a gateway built on it. One app, one POST route per
 * model path, `express.raw` for the body, one JSON.parse + JSON.stringify, undici out (one
 * keep-alive pool), the answer piped back as it arrives. Nothing else: no chat log, no validation,
 * no logging. The same work as bench/minimal-proxy.ts (node:http), so the difference between the two
 * is Express. `node --import tsx bench/minimal-express-proxy.ts '{"target":"http://..."}'` prints
 * `{"port":N}` on stdout.
 */
import express, { type Request, type Response } from 'express';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { serveChildProtocol } from './processes.ts';

const { target } = JSON.parse(process.argv[2] ?? '{}') as { target: string };
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256, pipelining: 1 });
const FORWARD = ['content-type', 'authorization', 'x-api-key', 'anthropic-version', 'anthropic-beta'];

async function proxy(req: Request, res: Response): Promise<void> {
  const body = JSON.stringify(JSON.parse((req.body as Buffer).toString('utf8')));
  const headers: Record<string, string> = {};
  for (const name of FORWARD) {
    const v = req.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  const up = await request(`${target}${req.originalUrl}`, {
    dispatcher: agent,
    method: 'POST',
    headers,
    body,
  });
  const contentType = up.headers['content-type'];
  res.status(up.statusCode);
  if (typeof contentType === 'string') res.setHeader('content-type', contentType);
  for await (const chunk of up.body) {
    if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
  }
  res.end();
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
// One route: the model paths the benchmarks call (Express 5 path syntax).
app.post(['/v1/chat/completions', '/v1/messages'], express.raw({ type: () => true, limit: '100mb' }), proxy);

const server = app.listen(0, '127.0.0.1', () => {
  serveChildProtocol((server.address() as AddressInfo).port, async () => {
    server.closeAllConnections();
    await agent.close();
  });
});
server.requestTimeout = 0;
