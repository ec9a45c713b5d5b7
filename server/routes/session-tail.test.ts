import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'express';
import { write } from './session-tail.ts';

test(
  "the tail's write resolves once the client is gone, whose response never drains",
  { timeout: 10_000 },
  async () => {
    const closed = new Promise<ServerResponse>((resolve) => {
      const server = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
        res.on('close', () => {
          server.close();
          resolve(res);
        });
      });
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
          res.once('data', () => undefined);
          req.destroy();
        });
        req.end();
      });
    });
    const res = await closed;
    // After 'close': a large write is refused by the dead socket and no 'drain' will ever come.
    await write(res as unknown as Response, 'x'.repeat(1 << 20));
    await write(res as unknown as Response, 'more');
    assert.ok(res.destroyed);
  },
);
