/**
 * A provider (or a proxy in front of it) that compresses its answer although the gateway asked for
 * `accept-encoding: identity`: the gateway decodes gzip, deflate and br, so the client gets the
 * answer's own bytes under its own content type and the chat log reads it; a coding it cannot
 * decode (zstd) is a 502 that says so, never compressed bytes passed on labelled as JSON.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { getEvents, ofType } from '../helpers/sdk-chat-drivers.ts';
import { Captured } from '../helpers/captured-log.ts';
import { createLogger } from '../../server/logger.ts';

const completion = JSON.stringify({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello compressed' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
});
const chunk = (delta: unknown, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const stream = chunk({ role: 'assistant', content: 'hello sse' }) + chunk({}, 'stop') + 'data: [DONE]\n\n';
const refusal = JSON.stringify({ error: { message: 'bad thing', type: 'invalid_request_error' } });

const ENCODE: Record<string, (b: Buffer) => Buffer> = {
  gzip: (b) => gzipSync(b),
  deflate: (b) => deflateSync(b),
  br: (b) => brotliCompressSync(b),
  // Not decodable by this Node version's zlib: stands for any coding the gateway cannot read.
  zstd: (b) => b,
};

describe('an upstream answer compressed although identity was asked for', () => {
  let gw: TestGateway;
  let upstream: Server;
  let reply: (req: IncomingMessage, res: ServerResponse) => void = () => {};
  const acceptEncodings: Array<string | undefined> = [];
  const logs = new Captured();
  before(async () => {
    upstream = createServer((req, res) => {
      acceptEncodings.push(req.headers['accept-encoding']);
      req.resume();
      req.on('end', () => reply(req, res));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as AddressInfo;
    gw = await startGateway({
      config: {
        logLevel: 'info',
        providers: [{ name: 'squeezed', format: 'openai', baseUrl: `http://127.0.0.1:${port}/v1` }],
      },
      deps: { logger: createLogger('info', logs) },
    });
  });
  after(async () => {
    await gw.close();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  const send = (session: string, streamed: boolean) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-session-id': session },
      body: JSON.stringify({
        model: 'm',
        stream: streamed,
        messages: [{ role: 'user', content: `hi ${session}` }],
      }),
    });

  for (const coding of ['gzip', 'deflate', 'br']) {
    test(`${coding}: the answer, a stream and a refusal reach the client and the log decoded`, async () => {
      const answer =
        (status: number, type: string, text: string) => (_: IncomingMessage, res: ServerResponse) => {
          const body = ENCODE[coding]!(Buffer.from(text));
          res.writeHead(status, {
            'content-type': type,
            'content-encoding': coding,
            'content-length': body.length,
          });
          res.end(body);
        };
      reply = answer(200, 'application/json', completion);
      const whole = await send(`${coding}-json`, false);
      assert.equal(whole.status, 200);
      assert.equal(whole.headers.get('content-encoding'), null);
      assert.equal(await whole.text(), completion);

      reply = answer(200, 'text/event-stream', stream);
      const streamed = await send(`${coding}-sse`, true);
      assert.equal(streamed.status, 200);
      assert.equal(await streamed.text(), stream);

      reply = answer(400, 'application/json', refusal);
      const refused = await send(`${coding}-400`, false);
      assert.equal(refused.status, 400);
      assert.equal(await refused.text(), refusal);

      for (const [session, text] of [
        [`${coding}-json`, 'hello compressed'],
        [`${coding}-sse`, 'hello sse'],
      ] as const) {
        const events = await getEvents(gw.url, session);
        const answerText = ofType(events, 'message')
          .filter((m) => m.role === 'model')
          .flatMap((m) => m.content.flatMap((p) => (p.kind === 'text' ? [p.text] : [])));
        assert.deepEqual(answerText, [text], session);
        assert.deepEqual(
          ofType(events, 'response').map((r) => r.ok),
          [true],
        );
      }
      const failed = ofType(await getEvents(gw.url, `${coding}-400`), 'response');
      assert.match(String(failed[0]?.error ?? ''), /bad thing/);
      assert.ok(acceptEncodings.every((a) => a === 'identity'));
    });
  }

  for (const coding of ['gzip', 'br']) {
    test(`${coding}: an answer whose compressed data ends before its end is reported as cut short`, async () => {
      // The provider closes its answer cleanly, but half of the compressed data never came.
      const half = (type: string, text: string) => (_: IncomingMessage, res: ServerResponse) => {
        const body = ENCODE[coding]!(Buffer.from(text));
        res.writeHead(200, { 'content-type': type, 'content-encoding': coding });
        res.end(body.subarray(0, body.length >> 1));
      };
      const long = (n: number) => 'a long answer, compressed, '.repeat(n);
      const said = `provider "squeezed" broke off its answer (HTTP 200) before it was whole: the provider's compressed answer (${coding}) ended before its end: it was cut short`;
      const cut = async () => {
        const metrics = await (await fetch(`${gw.url}/metrics`)).text();
        const line = metrics
          .split('\n')
          .find((l) =>
            l.startsWith('oda_requests_cut_total{route="/v1/chat/completions",reason="upstream"} '),
          );
        return line ? Number(line.split(' ')[1]) : 0;
      };

      reply = half('application/json', completion.replace('hello compressed', long(400)));
      const whole = await send(`${coding}-json-cut`, false);
      assert.equal(whole.status, 502);
      const sent = ((await whole.json()) as { error: { message: string; code: string } }).error;
      assert.equal(sent.code, 'ODA_ERR_UPSTREAM_UNREACHABLE');
      assert.equal(sent.message, said, 'the client is told the compressed answer was cut short');
      const loggedJson = ofType(await getEvents(gw.url, `${coding}-json-cut`), 'response');
      assert.equal(loggedJson[0]?.error, `answer ended before completion: ${said}`);

      const before = await cut();
      const from = logs.text.length;
      reply = half('text/event-stream', chunk({ role: 'assistant', content: long(400) }) + stream);
      const streamed = await send(`${coding}-sse-cut`, true);
      assert.equal(streamed.status, 200);
      await assert.rejects(streamed.text(), 'the client sees the stream break off');
      const loggedSse = ofType(await getEvents(gw.url, `${coding}-sse-cut`), 'response');
      assert.equal(loggedSse[0]?.ok, false);
      assert.equal(loggedSse[0]?.error, `stream ended before completion: ${said}`);
      const line = logs.text
        .slice(from)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.msg === 'model call cut short');
      assert.equal(line?.cutBy, 'upstream', JSON.stringify(line));
      assert.equal(line?.error, said);
      assert.equal(await cut(), before + 1, 'counted as cut by the provider');
    });
  }

  test('an answer that is not data of the coding it names is a 502 that says so', async () => {
    reply = (_, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(Buffer.from(completion));
    };
    const res = await send('not-gzip-json', false);
    assert.equal(res.status, 502);
    const body = (await res.json()) as { error: { message: string } };
    assert.match(body.error.message, /the provider's answer is not valid gzip data \(/);
  });

  test('a coding the gateway cannot decode is a 502 that names it', async () => {
    reply = (_, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'zstd' });
      res.end(Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x01, 0x02]));
    };
    const res = await send('zstd-json', false);
    assert.equal(res.status, 502);
    const body = (await res.json()) as { error: { message: string } };
    assert.match(body.error.message, /content-encoding "zstd", which the gateway cannot decode/);
  });
});
