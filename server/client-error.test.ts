import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { answerClientErrors } from './client-error.ts';

function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let got = '';
    socket.on('data', (d) => (got += d.toString()));
    socket.on('end', () => resolve(got));
    socket.on('error', reject);
  });
}

test('requests the HTTP parser refuses get a JSON error body', async () => {
  const server = createServer((_req, res) => res.end('ok'));
  answerClientErrors(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    const bad = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n');
    assert.match(bad, /^HTTP\/1\.1 400 Bad Request/);
    const body = JSON.parse(bad.slice(bad.indexOf('\r\n\r\n') + 4)) as {
      type: string;
      error: { code: string };
    };
    assert.equal(body.type, 'error');
    assert.equal(body.error.code, 'ODA_ERR_INVALID_REQUEST');
    const huge = await rawRequest(port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(huge, /^HTTP\/1\.1 431 /);
    assert.match(huge, /request headers are too large/);
  } finally {
    server.close();
  }
});
