/**
 * Provider bodies the gateway reads whole are read against a cap (SPEC section 14, bounded
 * memory): an error body past 4 MiB, or a JSON answer read whole past 64 MiB, is not read on; the
 * provider's connection is closed, the client gets a 502 in the endpoint's format naming the cap,
 * and the chat log records the failure. An answer passed on as it arrives (embeddings) has no cap.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const MiB = 1024 * 1024;
const KEY = 'sk-provider-key-0123456789';

/** What the tiny provider did with one answer. */
interface Sent {
  bytes: number;
  /** True when the connection closed before the whole body was written. */
  cut: boolean;
  closed: Promise<void>;
}

/** Writes `total` bytes of `fill` (after `head`) with backpressure; stops when the gateway hangs up. */
function writeBody(res: ServerResponse, head: string, total: number, sent: Sent[]): void {
  const record: Sent = { bytes: 0, cut: false, closed: Promise.resolve() };
  record.closed = new Promise<void>((resolve) =>
    res.on('close', () => {
      record.cut = !res.writableFinished;
      resolve();
    }),
  );
  sent.push(record);
  const chunk = Buffer.alloc(MiB, 'e');
  void (async () => {
    res.write(head);
    record.bytes += head.length;
    while (record.bytes < total && !res.destroyed) {
      record.bytes += chunk.length;
      if (!res.write(chunk))
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done);
            res.off('close', done);
            resolve();
          };
          res.on('drain', done);
          res.on('close', done);
        });
    }
    if (!res.destroyed) res.end();
  })();
}

describe('provider bodies read whole are capped', () => {
  let server: Server;
  let handler: (req: IncomingMessage, res: ServerResponse) => void;
  let sent: Sent[];
  let gw: TestGateway;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => handler(req, res));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    gw = await startGateway({
      config: {
        retries: { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 4 },
        providers: [
          { name: 'tiny-openai', format: 'openai', baseUrl: `${base}/v1`, apiKey: KEY },
          { name: 'tiny-anthropic', format: 'anthropic', baseUrl: base, apiKey: KEY },
        ],
      },
    });
  });
  after(async () => {
    await gw.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  beforeEach(() => {
    sent = [];
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

  const loggedResponse = async (sessionId: string) => {
    const events = (await (await fetch(`${gw.url}/v1/sessions/${sessionId}/events`)).json()) as {
      events: Array<{ type: string; status?: number; ok?: boolean; error?: string }>;
    };
    return events.events.find((e) => e.type === 'response');
  };

  test('a 503 whose error body runs past 4 MiB: read no further, connection closed, a 502 in the OpenAI format', async () => {
    handler = (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      writeBody(res, '', 64 * MiB, sent);
    };
    const res = await post(
      '/v1/chat/completions',
      { model: 'gpt-test', messages: [{ role: 'user', content: 'huge error' }] },
      { 'x-session-id': 'huge-error' },
    );
    assert.equal(res.status, 502);
    const body = (await res.json()) as { error: { code: string; message: string; type: string } };
    assert.equal(body.error.code, 'ODA_ERR_UPSTREAM_TOO_LARGE');
    assert.match(body.error.message, /error body \(HTTP 503\) exceeded 4194304 bytes/);
    // Not a failure a retry of the same call would fix: one attempt, and the client is not told to stop.
    assert.equal(res.headers.get('x-oda-attempts'), '1');
    assert.equal(res.headers.get('x-should-retry'), null);
    assert.equal(sent.length, 1);
    await sent[0]!.closed;
    assert.equal(sent[0]!.cut, true);
    assert.ok(sent[0]!.bytes < 32 * MiB, `the provider wrote ${sent[0]!.bytes} bytes`);
    const logged = await loggedResponse('huge-error');
    assert.equal(logged?.status, 502, 'the status the client got');
    assert.equal(logged?.ok, false);
    assert.match(logged?.error ?? '', /exceeded 4194304 bytes/);
  });

  test('an error body that says its length is over the cap is not read at all (Anthropic format)', async () => {
    handler = (_req, res) => {
      res.writeHead(529, { 'content-type': 'application/json', 'content-length': String(8 * MiB) });
      writeBody(res, '', 8 * MiB, sent);
    };
    const res = await post(
      '/v1/messages',
      { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    assert.equal(res.status, 502);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.type, 'error');
    assert.equal(body.error.type, 'api_error');
    assert.match(body.error.message, /error body \(HTTP 529\) exceeded 4194304 bytes/);
    await sent[0]!.closed;
    assert.equal(sent[0]!.cut, true);
  });

  test('an error body under the cap still comes back as sent, the key masked', async () => {
    const text = `${'x'.repeat(3 * MiB)} ${KEY}`;
    handler = (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain', 'x-should-retry': 'false' });
      res.end(text);
    };
    const res = await post('/v1/chat/completions', {
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(res.status, 500);
    assert.equal(await res.text(), `${'x'.repeat(3 * MiB)} [masked]`);
  });

  test('a non-streamed 200 answer past 64 MiB is a 502, and the log says why', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      writeBody(res, '{"id":"chatcmpl-big","object":"chat.completion","choices":[],"x":"', 96 * MiB, sent);
    };
    const res = await post(
      '/v1/chat/completions',
      { model: 'gpt-test', messages: [{ role: 'user', content: 'huge answer' }] },
      { 'x-session-id': 'huge-answer' },
    );
    assert.equal(res.status, 502);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ODA_ERR_UPSTREAM_TOO_LARGE');
    assert.match(body.error.message, /answer \(HTTP 200\) read whole exceeded 67108864 bytes/);
    await sent[0]!.closed;
    assert.equal(sent[0]!.cut, true);
    const logged = await loggedResponse('huge-answer');
    assert.equal(logged?.status, 502, 'the status the client got');
    assert.equal(logged?.ok, false);
    assert.equal(logged?.error, `answer ended before completion: ${body.error.message}`);
  });

  test('an embeddings answer past 64 MiB passes whole: it is streamed on, not read whole (keys still masked)', async () => {
    const head = `{"object":"list","note":"${KEY}","data":"`;
    const total = 70 * MiB;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      writeBody(res, head, total, sent);
    };
    const res = await post('/v1/embeddings', { model: 'text-embedding-test', input: 'x' });
    assert.equal(res.status, 200);
    const got = Buffer.from(await res.arrayBuffer());
    await sent[0]!.closed;
    assert.equal(sent[0]!.cut, false);
    assert.equal(got.length, sent[0]!.bytes - KEY.length + '[masked]'.length);
    assert.ok(got.subarray(0, 64).toString('utf8').includes('"note":"[masked]"'));
  });
});
