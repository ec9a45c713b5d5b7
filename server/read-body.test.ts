/**
 * The request body as read: a declared body sent in many pieces arrives whole and byte for byte,
 * and a client that declares a large body but sends little gets no buffer of the declared size.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Request, Response } from 'express';
import { readBody } from './read-body.ts';

const LIMIT = 64 * 1024 * 1024;

describe('reading a request body', () => {
  let server: Server;
  let url: string;
  /** What the middleware gave each request, by its path. */
  const seen = new Map<string, { body?: Buffer; err?: unknown }>();
  const waiting = new Map<string, () => void>();
  /** Bytes the server has read of the request to `/stalled` (counted beside the middleware). */
  let stalledRead = 0;

  before(async () => {
    const read = readBody(LIMIT);
    server = createServer((req, res) => {
      if (req.url === '/stalled') req.on('data', (c: Buffer) => (stalledRead += c.length));
      read(req as unknown as Request, res as unknown as Response, (err?: unknown) => {
        seen.set(req.url!, { body: (req as IncomingMessage & { body?: Buffer }).body, err });
        waiting.get(req.url!)?.();
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends `pieces` one write at a time, with their total declared. */
  async function send(path: string, pieces: Buffer[], declared = pieces.reduce((n, p) => n + p.length, 0)) {
    const done = new Promise<void>((resolve) => waiting.set(path, resolve));
    const req = request(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': declared },
    });
    req.on('response', (res) => res.resume());
    for (const p of pieces) {
      req.write(p);
      await new Promise((resolve) => setImmediate(resolve));
    }
    req.end();
    await done;
    return seen.get(path)!;
  }

  test('a body in many pieces, small and large, arrives whole and unchanged', async () => {
    for (const [path, total, piece] of [
      ['/small', 300, 300],
      ['/two', 9_000, 5_000],
      ['/large', 3 * 1024 * 1024 + 17, 64 * 1024],
    ] as const) {
      const bytes = Buffer.alloc(total);
      for (let i = 0; i < total; i++) bytes[i] = (i * 31 + 7) % 251;
      const pieces: Buffer[] = [];
      for (let at = 0; at < total; at += piece) pieces.push(bytes.subarray(at, at + piece));
      const got = await send(path, pieces);
      assert.equal(got.err, undefined);
      assert.equal(got.body?.length, total, path);
      assert.ok(got.body?.equals(bytes), `${path}: the same bytes`);
    }
  });

  test('a client that declares a large body and sends little gets no buffer of that size', async () => {
    const declared = 48 * 1024 * 1024;
    const req = request(`${url}/stalled`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': declared },
    });
    req.on('error', () => undefined);
    const before = process.memoryUsage().arrayBuffers;
    const sent = 256 * 1024;
    req.write(Buffer.alloc(sent, 0x20));
    // Until the server has read all that was sent.
    while (stalledRead < sent) await new Promise((resolve) => setTimeout(resolve, 10));
    const held = process.memoryUsage().arrayBuffers - before;
    req.destroy();
    assert.ok(held < 8 * 1024 * 1024, `held ${held} bytes for a body of which 256 KB came`);
  });
});
