/**
 * A gateway whose Redis store is unreachable stays alive and answers fast (SPEC section 8):
 * `/healthz` 200, `/readyz` 503, model calls and session routes a 503 ODA_ERR_STORE_UNAVAILABLE in
 * the endpoint's format, never a hang, and the provider is not called. When a redis-server binary
 * is installed, a private Redis is also stopped under a running gateway and started again: the
 * gateway reports it, then recovers on its own.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';
import { freePort } from '../helpers/free-port.ts';

const chat = (text: string) =>
  JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: text }] });
const messages = (text: string) =>
  JSON.stringify({ model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: text }] });

async function post(gw: TestGateway, path: string, body: string) {
  const started = performance.now();
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return {
    status: res.status,
    headers: res.headers,
    body: (await res.json()) as Record<string, unknown>,
    ms: performance.now() - started,
  };
}

/** A gateway on the Redis at `url`, waiting at most 200 ms for a connection per call. */
function gatewayOn(url: string): Promise<TestGateway> {
  return startGateway({
    config: { store: { kind: 'redis', url } },
    deps: { backend: new RedisLogBackend({ url, prefix: `oda-test:down:${Date.now()}:`, readyWaitMs: 200 }) },
  });
}

const redisServerInstalled = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

describe('Redis unreachable', { skip: testStoreIsRedis && 'runs once, in the file-store pass' }, () => {
  test('alive but not ready; every store-backed route is a quick 503 in its endpoint’s shape', async () => {
    const gw = await gatewayOn(`redis://127.0.0.1:${await freePort()}`);
    try {
      assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
      const ready = await fetch(`${gw.url}/readyz`);
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), { status: 'unavailable', store: 'redis' });

      const openai = await post(gw, '/v1/chat/completions', chat('anyone there?'));
      assert.equal(openai.status, 503);
      const oe = openai.body.error as { code: string; type: string; message: string };
      assert.equal(oe.code, 'ODA_ERR_STORE_UNAVAILABLE');
      assert.match(oe.message, /chat store \(Redis\) is unavailable/);
      assert.equal(openai.headers.get('retry-after'), '1');
      assert.ok(openai.ms < 3000, `${Math.round(openai.ms)} ms`);

      const anthropic = await post(gw, '/v1/messages', messages('anyone there?'));
      assert.equal(anthropic.status, 503);
      assert.equal(anthropic.body.type, 'error');
      assert.equal((anthropic.body.error as { type: string }).type, 'overloaded_error');
      assert.ok(anthropic.ms < 3000);

      const sessions = await fetch(`${gw.url}/v1/sessions`);
      assert.equal(sessions.status, 503);
      assert.equal(
        ((await sessions.json()) as { error: { code: string } }).error.code,
        'ODA_ERR_STORE_UNAVAILABLE',
      );
      assert.equal(gw.fake.requests.length, 0, 'nothing reaches the provider without the log');
    } finally {
      await gw.close();
    }
  });

  describe(
    'Redis stops under a running gateway and comes back',
    { skip: !redisServerInstalled && 'redis-server is not installed' },
    () => {
      let redis: ChildProcess | undefined;
      let dir: string | undefined;
      const startRedis = async (port: number) => {
        dir ??= mkdtempSync(join(tmpdir(), 'oda-redis-bounce-'));
        const child = spawn(
          'redis-server',
          ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
          {
            stdio: 'ignore',
          },
        );
        for (let i = 0; i < 100; i++) {
          const up = await new Promise<boolean>((resolve) => {
            const c = connect(port, '127.0.0.1');
            c.on('connect', () => (c.end(), resolve(true)));
            c.on('error', () => resolve(false));
          });
          if (up) return child;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error('private redis-server did not start');
      };
      const stopRedis = async () => {
        if (!redis || redis.exitCode !== null) return;
        const exited = new Promise((resolve) => redis!.once('exit', resolve));
        redis.kill('SIGKILL');
        await exited;
      };
      after(async () => {
        await stopRedis();
        if (dir) rmSync(dir, { recursive: true, force: true });
      });

      test('503s while it is gone, then serves again without a restart', async () => {
        const port = await freePort();
        redis = await startRedis(port);
        const gw = await gatewayOn(`redis://127.0.0.1:${port}`);
        try {
          assert.equal((await post(gw, '/v1/chat/completions', chat('before'))).status, 200);
          await stopRedis();
          const down = await post(gw, '/v1/chat/completions', chat('during'));
          assert.equal(down.status, 503);
          assert.ok(down.ms < 3000, `${Math.round(down.ms)} ms`);
          assert.equal((await fetch(`${gw.url}/readyz`)).status, 503);

          redis = await startRedis(port);
          let ready = 0;
          for (let i = 0; i < 50 && ready !== 200; i++) {
            await new Promise((r) => setTimeout(r, 100));
            ready = (await fetch(`${gw.url}/readyz`)).status;
          }
          assert.equal(ready, 200, 'ready again once Redis is back');
          assert.equal((await post(gw, '/v1/chat/completions', chat('after'))).status, 200);
        } finally {
          await gw.close();
        }
      });
    },
  );
});
