/**
 * Safe defaults (SPEC section 14): a web page cannot drive the gateway and a rebound DNS name cannot
 * read it. A POST whose body is not JSON is a 415 on every POST route (a `text/plain` POST needs no
 * CORS preflight), a foreign `Origin` is a 403 unless configured, and a loopback gateway answers
 * only its own names in `Host`. Config checks stop start-up; the start-up log hides base URL
 * secrets and warns about an open gateway beyond loopback.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { listenGateway } from '../../server/listen.ts';
import { createApp } from '../../server/app.ts';
import { parseConfig } from '../../config/config.ts';
import { createLogger } from '../../server/logger.ts';
import { loadOpenApi, validateResponse } from '../helpers/openapi-validator.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { Captured } from '../helpers/captured-log.ts';

const root = new URL('../..', import.meta.url).pathname;
const doc = loadOpenApi();

/** The answer is documented in openapi.yaml for its route and status, body schema included. */
function assertDocumented(method: string, path: string, r: { status: number; json: unknown }): void {
  assert.deepEqual(
    validateResponse(doc, method, path, r.status, r.json),
    [],
    `${method} ${path} ${r.status}`,
  );
}

const messagesBody = JSON.stringify({
  model: 'claude-test',
  max_tokens: 10,
  messages: [{ role: 'user', content: 'hi' }],
});
const chatBody = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });

describe('a web page cannot drive a local gateway', () => {
  let gw: TestGateway;
  let own: string;
  before(async () => {
    gw = await startGateway({
      config: {
        server: { allowedOrigins: ['https://app.example.com'], allowedHosts: ['gateway.internal'] },
      },
    });
    own = new URL(gw.url).host;
  });
  after(async () => gw.close());

  test('a body that is not application/json is a 415 on every POST route; the provider hears nothing', async () => {
    gw.fake.reset();
    const routes = [
      ['/v1/chat/completions', chatBody],
      ['/v1/messages', messagesBody],
      ['/v1/messages?beta=true', messagesBody],
      ['/v1/messages/count_tokens', messagesBody],
      ['/v1/sessions', JSON.stringify({ id: 'csrf-chat' })],
    ] as const;
    for (const [path, body] of routes) {
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
      ]) {
        const r = await rawRequest(gw.url, { path, headers: { 'content-type': type }, body });
        assert.equal(r.status, 415, `${path} ${type}: ${r.text}`);
        assertDocumented('POST', path, r);
        const error = r.json?.error as { message: string };
        assert.match(error.message, /must be sent as application\/json/);
      }
      const none = await rawRequest(gw.url, { path, headers: {}, body });
      assert.equal(none.status, 415, `${path} without a content type`);
    }
    assert.equal(gw.fake.requests.length, 0);
    const listed = await rawRequest(gw.url, { method: 'GET', path: '/v1/sessions/csrf-chat', headers: {} });
    assert.equal(listed.status, 404, 'the chat was not created');

    const ok = await rawRequest(gw.url, {
      path: '/v1/chat/completions',
      headers: { 'content-type': 'Application/JSON; charset=utf-8' },
      body: chatBody,
    });
    assert.equal(ok.status, 200, 'parameters and case are allowed');
  });

  test('a foreign Origin is a 403 before anything runs; the gateway’s own and allowed origins pass', async () => {
    gw.fake.reset();
    for (const origin of [
      'https://evil.example',
      'null',
      'http://127.0.0.1.evil.example',
      'http://localhost:1',
    ]) {
      const r = await rawRequest(gw.url, {
        path: '/v1/messages',
        headers: { 'content-type': 'application/json', origin },
        body: messagesBody,
      });
      assert.equal(r.status, 403, `${origin}: ${r.text}`);
      assertDocumented('POST', '/v1/messages', r);
      assert.equal((r.json?.error as { type: string }).type, 'permission_error');
      assert.match(r.text, /server\.allowedOrigins/);
      const read = await rawRequest(gw.url, { method: 'GET', path: '/v1/sessions', headers: { origin } });
      assert.equal(read.status, 403, `${origin} cannot read the chats`);
      assertDocumented('GET', '/v1/sessions', read);
    }
    assert.equal(gw.fake.requests.length, 0);

    const mine = await rawRequest(gw.url, {
      path: '/v1/messages',
      headers: { 'content-type': 'application/json', origin: `http://${own}` },
      body: messagesBody,
    });
    assert.equal(mine.status, 200, 'the gateway’s own pages');

    const allowed = await rawRequest(gw.url, {
      path: '/v1/messages',
      headers: { 'content-type': 'application/json', origin: 'https://app.example.com' },
      body: messagesBody,
    });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.com');
    const preflight = await rawRequest(gw.url, {
      method: 'OPTIONS',
      path: '/v1/messages',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-api-key',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers['access-control-allow-headers'], 'content-type,x-api-key');
    const foreignPreflight = await rawRequest(gw.url, {
      method: 'OPTIONS',
      path: '/v1/messages',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(foreignPreflight.status, 403);
    assert.equal(foreignPreflight.headers['access-control-allow-origin'], undefined);
  });

  test('DNS rebinding: a loopback gateway answers only its own names in Host', async () => {
    const port = new URL(gw.url).port;
    for (const host of [`rebind.evil.example:${port}`, 'evil.example', `127.0.0.1.nip.io:${port}`]) {
      const r = await rawRequest(gw.url, { method: 'GET', path: '/v1/sessions', headers: { host } });
      assert.equal(r.status, 403, `${host}: ${r.text}`);
      assert.match(r.text, /server\.allowedHosts/);
      const metrics = await rawRequest(gw.url, { method: 'GET', path: '/metrics', headers: { host } });
      assert.equal(metrics.status, 403, `${host} /metrics`);
      assertDocumented('GET', '/metrics', metrics);
    }
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'gateway.internal',
      'LOCALHOST',
    ]) {
      const r = await rawRequest(gw.url, { method: 'GET', path: '/v1/sessions', headers: { host } });
      assert.equal(r.status, 200, `${host}: ${r.text}`);
    }
  });
});

describe('a gateway not on loopback has no Host check (it sits behind names and balancers)', () => {
  test('any Host passes; the Origin check still holds', async () => {
    const gw = await startGateway({ config: { server: { host: '0.0.0.0' } } });
    try {
      const r = await rawRequest(gw.url, {
        method: 'GET',
        path: '/v1/sessions',
        headers: { host: 'gateway.example.com' },
      });
      assert.equal(r.status, 200, r.text);
      const foreign = await rawRequest(gw.url, {
        method: 'GET',
        path: '/v1/sessions',
        headers: { host: 'gateway.example.com', origin: 'https://evil.example' },
      });
      assert.equal(foreign.status, 403);
      const own = await rawRequest(gw.url, {
        method: 'GET',
        path: '/v1/sessions',
        headers: { host: 'gateway.example.com', origin: 'https://gateway.example.com' },
      });
      assert.equal(own.status, 200, 'its own origin behind TLS termination');
    } finally {
      await gw.close();
    }
  });
});

describe('config checks and start-up log', () => {
  test('adminKeys without teams stops start-up with a message', async () => {
    const dir = tempDir('oda-hard-');
    const cfg = join(dir, 'oda.yaml');
    writeFileSync(cfg, `adminKeys: ["sha256:${'a'.repeat(64)}"]\n`);
    const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ODA_CONFIG: cfg, ODA_DATA_DIR: join(dir, 'data'), PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 1);
    assert.match(out, /adminKeys: admin keys need teams/);
  });

  test('duplicate team names and keys, and base URLs with user info or a query, are refused', () => {
    const key = `sha256:${'b'.repeat(64)}`;
    const other = `sha256:${'c'.repeat(64)}`;
    const refused = (raw: unknown, message: RegExp) => assert.throws(() => parseConfig(raw), message);
    refused(
      {
        teams: [
          { name: 'Research', keys: [key] },
          { name: 'research', keys: [other] },
        ],
      },
      /teams\.1\.name: duplicate team name/,
    );
    refused(
      {
        teams: [
          { name: 'a', keys: [key] },
          { name: 'b', keys: [key] },
        ],
      },
      /teams\.1\.keys\.0: this key is listed twice \(also at teams\.0\.keys\.0\)/,
    );
    refused({ teams: [{ name: 'a', keys: [key, key] }] }, /teams\.0\.keys\.1: this key is listed twice/);
    refused(
      { teams: [{ name: 'a', keys: [key] }], adminKeys: [key] },
      /adminKeys\.0: this key is listed twice/,
    );
    refused({ teams: [{ name: '..', keys: [key] }] }, /teams\.0\.name: a team name cannot be \. or \.\./);
    refused(
      { providers: [{ name: 'p', format: 'openai', baseUrl: 'https://user:secret@api.example.com/v1' }] },
      /providers\.0\.baseUrl: must not hold user info/,
    );
    refused(
      { providers: [{ name: 'p', format: 'openai', baseUrl: 'https://api.example.com/v1?api-key=secret' }] },
      /providers\.0\.baseUrl: must not hold a query string/,
    );
    refused(
      { teams: [{ name: 'a', keys: [key], maxConcurrent: 256 }] },
      /teams\.0\.maxConcurrent: 256 must be below server\.maxConcurrent \(256\)/,
    );
  });

  test('start-up logs show each baseUrl’s origin and path only, and warn for an open gateway off loopback', async () => {
    const logs = new Captured();
    const logger = createLogger('info', logs);
    const dir = tempDir('oda-hard-');
    const config = parseConfig({
      dataDir: dir,
      server: { host: '0.0.0.0', port: 0 },
      providers: [
        {
          name: 'p',
          format: 'openai',
          baseUrl: 'https://api.example.com:8443/v1/',
          apiKey: 'sk-secret-value-123',
        },
      ],
    });
    const gateway = createApp(config, { logger });
    const server = listenGateway(gateway, config, logger);
    await new Promise<void>((resolve) => server.once('listening', () => setImmediate(resolve)));
    server.close();
    await gateway.close();
    assert.match(logs.text, /"baseUrl":"https:\/\/api\.example\.com:8443\/v1\/"/);
    assert.ok(!logs.text.includes('sk-secret-value-123'));
    assert.match(logs.text, /open gateway \(no teams\) listening on 0\.0\.0\.0/);
    assert.ok(!logs.text.includes('no providers configured'), 'a provider is configured');
    assert.match(logs.text, /"level":40/, 'a warning');
  });

  test('a config that lists no providers is warned about at start', async () => {
    const logs = new Captured();
    const logger = createLogger('info', logs);
    const config = parseConfig({ dataDir: tempDir('oda-none-'), server: { port: 0 }, providers: [] });
    const gateway = createApp(config, { logger });
    const server = listenGateway(gateway, config, logger);
    await new Promise<void>((resolve) => server.once('listening', () => setImmediate(resolve)));
    server.close();
    await gateway.close();
    assert.match(logs.text, /"level":40,.*no providers configured \(providers: \[\]\)/);
  });

  test('on an IPv6 address the start-up line gives a URL that works: the address in brackets', async (t) => {
    const logs = new Captured();
    const logger = createLogger('info', logs);
    const config = parseConfig({ dataDir: tempDir('oda-v6-'), server: { host: '::1', port: 0 } });
    const gateway = createApp(config, { logger });
    const server = listenGateway(gateway, config, logger);
    const listening = await new Promise<boolean>((resolve) => {
      server.once('listening', () => setImmediate(() => resolve(true)));
      server.once('error', () => resolve(false));
    });
    try {
      if (!listening) return t.skip('no IPv6 loopback on this machine');
      const url = /listening on (\S+)"/.exec(logs.text)?.[1];
      assert.match(url ?? '', /^http:\/\/\[::1\]:\d+$/);
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
    } finally {
      server.close();
      await gateway.close();
    }
  });
});
