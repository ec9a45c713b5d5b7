import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostName, isLoopbackHost } from './origin-guard.ts';
import { hasBody, isJsonContentType } from './content-type-guard.ts';
import { narrowAnthropicBetas, upstreamHeaders } from './upstream-headers.ts';
import express from 'express';
import type { AddressInfo } from 'node:net';
import { fairShare, holdCallSlot, InFlight } from './fair-share.ts';
import { secretMasker } from '../lib/mask-secrets.ts';
import { FORMATS } from '../providers/registry.ts';
import { shownBaseUrl, openBeyondLoopback } from './listen.ts';
import { parseConfig } from '../config/config.ts';

describe('origin guard helpers', () => {
  test('loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]'])
      assert.ok(isLoopbackHost(h), h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'gateway.local', '127.0.0.1.evil.example', '128.0.0.1'])
      assert.ok(!isLoopbackHost(h), h);
  });

  test('host names of Host header values', () => {
    assert.equal(hostName('LocalHost:8080'), 'localhost');
    assert.equal(hostName('[::1]:8080'), '::1');
    assert.equal(hostName('[::1]'), '::1');
    assert.equal(hostName('localhost.'), 'localhost');
    assert.equal(hostName('evil.example:80'), 'evil.example');
    assert.equal(hostName('::1'), '::1', 'a bare IPv6 address is not split at a colon');
  });
});

describe('content type', () => {
  test('application/json with any parameters and case', () => {
    for (const t of [
      'application/json',
      'Application/JSON',
      'application/json; charset=utf-8',
      ' application/json ;x=y',
    ])
      assert.ok(isJsonContentType(t), t);
    for (const t of [
      undefined,
      '',
      'text/plain',
      'application/jsonx',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'text/json',
    ])
      assert.ok(!isJsonContentType(t), String(t));
  });

  test('a body is a length above zero or a transfer encoding', () => {
    assert.ok(hasBody({ 'content-length': '5' }));
    assert.ok(!hasBody({ 'content-length': '0' }));
    assert.ok(hasBody({ 'transfer-encoding': 'chunked' }));
    assert.ok(!hasBody({}));
  });
});

describe('upstream headers', () => {
  test('anthropic-beta narrowed by names and globs, case-insensitive', () => {
    assert.equal(narrowAnthropicBetas('a-1, b-2,c-3', undefined), 'a-1, b-2,c-3');
    assert.equal(narrowAnthropicBetas('a-1, b-2,c-3', ['b-*', 'C-3']), 'b-2,c-3');
    assert.equal(narrowAnthropicBetas('a-1', []), undefined);
  });

  test('with teams only the allow-list passes; the provider key replaces credentials', () => {
    const out = upstreamHeaders(
      {
        'x-stainless-os': 'Linux',
        'x-codex-window-id': 'w',
        'openai-project': 'p',
        authorization: 'Bearer team',
        'x-session-id': 's',
        'x-oda-pruning': 'off',
      },
      FORMATS.openai,
      'sk-provider',
      false,
    );
    assert.deepEqual(out, {
      'x-stainless-os': 'Linux',
      'x-codex-window-id': 'w',
      'content-type': 'application/json',
      'accept-encoding': 'identity',
      authorization: 'Bearer sk-provider',
    });
  });
});

describe('fair share counts', () => {
  test('per team and in all; a release frees the slot', () => {
    const f = new InFlight(3, new Map([['a', 2]]));
    assert.equal(f.acquire('a'), 'ok');
    assert.equal(f.acquire('a'), 'ok');
    assert.equal(f.acquire('a'), 'team');
    assert.equal(f.acquire(undefined), 'ok');
    assert.equal(f.acquire('b'), 'gateway');
    f.release('a');
    assert.equal(f.count('a'), 1);
    assert.equal(f.acquire('b'), 'ok');
    assert.equal(f.count(), 3);
  });
});

describe('fair share: a call whose client left keeps its slot until its work is over', () => {
  test('a second call of the team is refused while the first still works, and goes once it is done', async () => {
    const config = parseConfig({
      providers: [{ name: 'p', format: 'openai', baseUrl: 'http://127.0.0.1:1/v1' }],
    });
    const counts = new InFlight(8, new Map([['a', 1]]));
    // Each call's work waits until the test lets it finish.
    const calls: Array<{ finish: () => void }> = [];
    let onStart = () => {};
    const app = express();
    app.use((_req, res, next) => {
      res.locals.caller = { team: 'a' };
      next();
    });
    app.use(fairShare(config, counts));
    app.post('/work', async (_req, res) => {
      const slot = holdCallSlot(res);
      await new Promise<void>((finish) => {
        calls.push({ finish });
        onStart();
      });
      slot();
      if (!res.destroyed) res.json({ ok: true });
    });
    app.use(((err, _req, res, _next) => {
      res.status((err as { status?: number }).status ?? 500).json({ error: String(err) });
    }) as express.ErrorRequestHandler);
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/work`;
    const started = () => new Promise<void>((r) => (onStart = r));
    try {
      const abort = new AbortController();
      const first = started();
      const gone = fetch(url, { method: 'POST', signal: abort.signal }).catch(() => 'gone');
      await first;
      abort.abort();
      assert.equal(await gone, 'gone');
      // The client is gone, but its call still works (parses, logs): the team's one slot is taken.
      for (let i = 0; i < 3; i++) {
        const refused = await fetch(url, { method: 'POST' });
        assert.equal(refused.status, 429, 'refused while the abandoned call works');
        await refused.text();
      }
      assert.equal(counts.count('a'), 1);
      calls[0]!.finish();
      for (let i = 0; i < 200 && counts.count('a') > 0; i++) await new Promise((r) => setTimeout(r, 5));
      assert.equal(counts.count('a'), 0, 'freed once its work is over');
      const next = started();
      const accepted = fetch(url, { method: 'POST' });
      await next;
      calls[1]!.finish();
      assert.equal((await accepted).status, 200);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('secret masking', () => {
  test('every configured key, as is or JSON-escaped; short values are left alone', () => {
    const mask = secretMasker(['sk-abc"def-123456', 'sk-other-987654321', undefined, 'short']);
    assert.equal(mask('key sk-other-987654321 and sk-other-987654321'), 'key [masked] and [masked]');
    assert.equal(mask(JSON.stringify({ m: 'bad key sk-abc"def-123456' })), '{"m":"bad key [masked]"}');
    assert.equal(mask('a short word'), 'a short word');
  });
});

describe('start-up', () => {
  test('base URLs are shown as origin and path', () => {
    assert.equal(shownBaseUrl('https://api.example.com/v1'), 'https://api.example.com/v1');
    assert.equal(shownBaseUrl('https://api.example.com'), 'https://api.example.com');
  });

  test('an open gateway beyond loopback is told apart', () => {
    assert.ok(openBeyondLoopback(parseConfig({ server: { host: '0.0.0.0' } })));
    assert.ok(!openBeyondLoopback(parseConfig({ server: { host: '127.0.0.1' } })));
    assert.ok(
      !openBeyondLoopback(
        parseConfig({
          server: { host: '0.0.0.0' },
          teams: [{ name: 't', keys: [`sha256:${'a'.repeat(64)}`] }],
        }),
      ),
    );
  });
});
