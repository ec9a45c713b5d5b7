import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, redactNested } from './logger.ts';

/** A logger writing into a string, as the gateway's logger dep would. */
function captured() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { logger: createLogger('trace', stream), text: () => text };
}

const SECRETS = ['Bearer oda_team_key', 'oda_x_api_key', 'sk-provider-secret', 'azure-key', 'redis-password'];

test('credentials in every shape the gateway might log are redacted, the rest is kept', () => {
  const { logger, text } = captured();
  logger.info(
    {
      req: {
        method: 'POST',
        headers: { authorization: 'Bearer oda_team_key', 'x-api-key': 'oda_x_api_key' },
      },
    },
    'incoming',
  );
  logger.info(
    {
      headers: {
        authorization: 'Bearer oda_team_key',
        'api-key': 'azure-key',
        'anthropic-version': '2023-06-01',
      },
    },
    'headers',
  );
  logger.warn(
    {
      upstream: {
        url: 'http://p/v1',
        headers: { authorization: 'Bearer oda_team_key', 'x-api-key': 'oda_x_api_key' },
      },
    },
    'nested',
  );
  logger.info({ provider: { name: 'p', apiKey: 'sk-provider-secret' } }, 'provider');
  logger.info({ providers: [{ name: 'p', apiKey: 'sk-provider-secret' }] }, 'providers');
  logger.info(
    {
      config: {
        providers: [{ apiKey: 'sk-provider-secret' }],
        store: { kind: 'redis', url: 'redis://:redis-password@h:6379' },
      },
    },
    'config',
  );
  logger.error(
    { apiKey: 'sk-provider-secret', store: { url: 'redis://:redis-password@h:6379' } },
    'top level',
  );
  const out = text();
  const lines = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(lines.length, 7);
  for (const secret of SECRETS) assert.ok(!out.includes(secret.replace('Bearer ', '')), `${secret} leaked`);
  assert.ok(out.includes('[redacted]'));
  assert.equal(
    (lines[1]!.headers as Record<string, string>)['anthropic-version'],
    '2023-06-01',
    'harmless headers stay',
  );
  assert.equal((lines[0]!.req as { method: string }).method, 'POST');
});

test('an error carrying credentials in its headers is redacted and still logged as an error', () => {
  const { logger, text } = captured();
  const err = Object.assign(new Error('upstream refused'), {
    headers: { authorization: 'Bearer oda_team_key', 'retry-after': '1' },
  });
  logger.error({ err }, 'failed');
  const out = text();
  assert.ok(!out.includes('oda_team_key'), 'the key leaked');
  const line = JSON.parse(out) as { err: { type: string; message: string; stack: string; headers: object } };
  assert.equal(line.err.type, 'Error');
  assert.equal(line.err.message, 'upstream refused');
  assert.match(line.err.stack, /upstream refused/);
  assert.deepEqual(line.err.headers, { authorization: '[redacted]', 'retry-after': '1' });
  assert.equal(err.headers.authorization, 'Bearer oda_team_key', 'the logged object itself is not changed');
});

test("a child logger's bindings are redacted like a line's fields", () => {
  const { logger, text } = captured();
  logger
    .child({
      reqId: 'r1',
      upstream: { headers: { 'x-api-key': 'oda_x_api_key' } },
      provider: { apiKey: 'azure-key' },
    })
    .info('bound');
  const out = text();
  for (const secret of ['oda_x_api_key', 'azure-key']) assert.ok(!out.includes(secret), `${secret} leaked`);
  const line = JSON.parse(out) as { reqId: string; upstream: { headers: Record<string, string> } };
  assert.equal(line.reqId, 'r1');
  assert.equal(line.upstream.headers['x-api-key'], '[redacted]');
  // A child of a child too.
  const nested = captured();
  nested.logger
    .child({ reqId: 'r2' })
    .child({ call: { headers: { authorization: 'Bearer oda_team_key' } } })
    .info('bound twice');
  assert.ok(!nested.text().includes('oda_team_key'), 'the key leaked from a grandchild');
  assert.equal((JSON.parse(nested.text()) as { reqId: string }).reqId, 'r2');
});

test('a line without credentials is passed on as it is, not copied', () => {
  const plain = { reqId: 'r1', status: 200, attempts: 1, streamed: false, msg: 'model call done' };
  assert.equal(redactNested(plain), plain);
  const harmless = {
    upstream: { url: 'http://p/v1', headers: { 'anthropic-version': '2023-06-01' } },
    list: [1],
  };
  assert.equal(redactNested(harmless), harmless);
  const secret = { reqId: 'r1', provider: { name: 'p', apiKey: 'sk-provider-secret' } };
  const redacted = redactNested(secret);
  assert.notEqual(redacted, secret);
  assert.deepEqual(redacted, { reqId: 'r1', provider: { name: 'p', apiKey: '[redacted]' } });
  assert.equal(secret.provider.apiKey, 'sk-provider-secret', 'the caller’s object is not changed');
});
