/**
 * The floor any Node.js gateway pays: node:http in, one JSON.parse + JSON.stringify of the body,
 * undici out (one keep-alive pool), the answer piped back as it arrives. Nothing else: no chat log,
 * no validation, no logging. `node --import tsx bench/minimal-proxy.ts '{"target":"http://..."}'`
 * prints `{"port":N}` on stdout. With `"pipe": true` it is a byte pipe: the body is sent on as it
 * was read, not parsed (what carrying a body one more hop costs, with no work on it at all).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { serveChildProtocol } from './processes.ts';

const { target, pipe = false } = JSON.parse(process.argv[2] ?? '{}') as { target: string; pipe?: boolean };
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 256, pipelining: 1 });
const FORWARD = ['content-type', 'authorization', 'x-api-key', 'anthropic-version', 'anthropic-beta'];

async function proxy(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const read = Buffer.concat(chunks);
  const body = pipe ? read : JSON.stringify(JSON.parse(read.toString('utf8')));
  const headers: Record<string, string> = {};
  for (const name of FORWARD) {
    const v = req.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  const up = await request(`${target}${req.url ?? '/'}`, {
    dispatcher: agent,
    method: 'POST',
    headers,
    body,
  });
  const contentType = up.headers['content-type'];
  res.writeHead(up.statusCode, typeof contentType === 'string' ? { 'content-type': contentType } : {});
  for await (const chunk of up.body) {
    if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
  }
  res.end();
}

const server = createServer((req, res) => {
  proxy(req, res).catch((err: unknown) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(String(err));
  });
});
server.listen(0, '127.0.0.1', () => {
  serveChildProtocol((server.address() as AddressInfo).port, async () => {
    server.closeAllConnections();
    await agent.close();
  });
});
