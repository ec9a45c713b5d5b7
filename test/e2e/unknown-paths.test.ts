/**
 * Any path under /v1/ the gateway does not serve (SPEC section 2): a 404 that names the method and
 * the path and says the gateway does not serve it, in the error shape of the format the request
 * looks like: Anthropic's when it carries `anthropic-version` or `x-api-key` (what the Anthropic
 * SDK sends), else OpenAI's. Nothing reaches the provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

describe('paths the gateway does not serve', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test('openai SDK: a 404 in OpenAI’s shape naming the method and path', async () => {
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-client', maxRetries: 0 });
    await assert.rejects(
      openai.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'hi' }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.NotFoundError, `expected a 404, got ${String(e)}`);
        assert.deepEqual(e.error, {
          message: 'the gateway does not serve POST /v1/audio/speech',
          type: 'not_found_error',
          param: null,
          code: 'ODA_ERR_NOT_FOUND',
        });
        return true;
      },
    );
    await assert.rejects(openai.files.list(), /the gateway does not serve GET \/v1\/files/);
    assert.equal(gw.fake.requests.length, 0);
  });

  test('Anthropic SDK: a 404 in Anthropic’s shape', async () => {
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'sk-ant-client', maxRetries: 0 });
    await assert.rejects(anthropic.beta.files.list(), (e: unknown) => {
      assert.ok(e instanceof Anthropic.NotFoundError, `expected a 404, got ${String(e)}`);
      assert.deepEqual(e.error, {
        type: 'error',
        error: { type: 'not_found_error', message: 'the gateway does not serve GET /v1/files' },
      });
      return true;
    });
    await assert.rejects(anthropic.messages.batches.list(), (e: unknown) => {
      assert.ok(e instanceof Anthropic.NotFoundError, `expected a 404, got ${String(e)}`);
      assert.match(e.message, /the gateway does not serve GET \/v1\/messages\/batches/);
      return true;
    });
    assert.equal(gw.fake.requests.length, 0);
  });

  test('a WebSocket handshake is a 426 (HTTP only), so a client that tries WebSocket first falls back at once', async () => {
    // What Codex on the OpenAI provider sends before its first POST /v1/responses.
    const answer = await new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        const req = request(`${gw.url}/v1/responses`, {
          headers: {
            connection: 'Upgrade',
            upgrade: 'websocket',
            'sec-websocket-version': '13',
            'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
            authorization: 'Bearer sk-client',
          },
        });
        req.on('response', (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        });
        req.on('upgrade', () => reject(new Error('the gateway accepted a WebSocket')));
        req.on('error', reject);
        req.end();
      },
    );
    assert.equal(answer.status, 426);
    // RFC 9110 15.5.22: a 426 names the protocol required (plain HTTP/1.1), and Upgrade, a
    // hop-by-hop header, is listed in Connection (7.8).
    assert.equal(answer.headers.upgrade, 'HTTP/1.1');
    assert.equal(answer.headers.connection, 'Upgrade');
    assert.deepEqual(JSON.parse(answer.body), {
      error: {
        message:
          'the gateway does not serve WebSocket connections (GET /v1/responses); send the request over HTTP',
        type: 'invalid_request_error',
        param: null,
        code: 'ODA_ERR_WEBSOCKET_UNSUPPORTED',
      },
    });
    // A plain GET of the same path is still the 404.
    const plain = await fetch(`${gw.url}/v1/responses`, { headers: { authorization: 'Bearer sk-client' } });
    assert.equal(plain.status, 404);
    assert.equal(gw.fake.requests.length, 0);
  });

  test('an upload to a path the gateway does not serve is that 404, not a 415 for its content type', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.from('RIFF....WAVE')], { type: 'audio/wav' }), 'a.wav');
    form.append('model', 'whisper-1');
    const res = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', body: form });
    assert.equal(res.status, 404);
    const body = (await res.json()) as { error: { message: string } };
    assert.match(body.error.message, /the gateway does not serve POST \/v1\/audio\/transcriptions/);
    // A served route still refuses a body that is not JSON.
    const served = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', body: form });
    assert.equal(served.status, 415, 'served routes keep the content-type check');
    assert.equal(gw.fake.requests.length, 0, 'the provider received nothing');
  });

  test('plain requests: the shape follows anthropic-version or x-api-key; the query is not echoed', async () => {
    const shapes: Array<[Record<string, string>, 'openai' | 'anthropic']> = [
      [{}, 'openai'],
      [{ authorization: 'Bearer sk-x' }, 'openai'],
      [{ 'x-api-key': 'sk-ant-x' }, 'anthropic'],
      [{ 'anthropic-version': '2023-06-01' }, 'anthropic'],
    ];
    for (const [headers, shape] of shapes) {
      const res = await fetch(`${gw.url}/v1/realtime/sessions?secret=1`, { headers });
      assert.equal(res.status, 404);
      const body = (await res.json()) as Record<string, unknown>;
      const message = 'the gateway does not serve GET /v1/realtime/sessions';
      if (shape === 'openai') {
        assert.deepEqual(body, {
          error: { message, type: 'not_found_error', param: null, code: 'ODA_ERR_NOT_FOUND' },
        });
      } else {
        assert.deepEqual(body, { type: 'error', error: { type: 'not_found_error', message } });
      }
    }
  });
});
