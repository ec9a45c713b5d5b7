import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from './logger.ts';

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
