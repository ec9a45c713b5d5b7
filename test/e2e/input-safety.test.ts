/**
 * Bad input never escapes dataDir, crashes the process or stalls it (SPEC section 8): chat ids with
 * path tricks on every session route and in `x-session-id`, attachment media types with path
 * tricks, oversize bodies (413), deeply nested and huge JSON. Every answer is a clear error in the
 * endpoint's shape, and a normal request succeeds afterwards.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { anthropicMessage, openaiCompletion } from '../fake-provider/fake-bodies.ts';
import { makePng } from '../../chat-log/test-images.ts';

interface Answer {
  status: number;
  text: string;
  json: Record<string, unknown> | undefined;
}

/** Sends a request with the path exactly as given (fetch would normalise `..` and `%2e%2e`). */
function raw(
  gw: TestGateway,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  const { port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> | undefined;
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function assertOpenAiError(a: Answer, statuses: number[], what: string): void {
  assert.ok(statuses.includes(a.status), `${what}: status ${a.status} ${a.text.slice(0, 200)}`);
  const error = a.json?.error as { type?: string; message?: string; code?: string } | undefined;
  assert.ok(
    error && typeof error.message === 'string' && typeof error.type === 'string',
    `${what}: OpenAI error shape: ${a.text.slice(0, 200)}`,
  );
}

function assertAnthropicError(a: Answer, status: number, what: string): void {
  assert.equal(a.status, status, `${what}: ${a.text.slice(0, 200)}`);
  assert.equal(a.json?.type, 'error', what);
  assert.equal(typeof (a.json?.error as { type?: unknown } | undefined)?.type, 'string', what);
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p).map((f) => join(name, f)));
    else out.push(name);
  }
  return out.sort();
}

const SECRET = 'TOP-SECRET-OUTSIDE-THE-CHATS-FOLDER';
const chatBody = (text = 'safe?') =>
  JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: text }] });
const messagesBody = (text = 'safe?') =>
  JSON.stringify({ model: 'claude-test', max_tokens: 5, messages: [{ role: 'user', content: text }] });

describe('input safety: ids and names never leave dataDir', () => {
  let gw: TestGateway;
  let planted: string;
  before(async () => {
    gw = await startGateway();
    // A valid chat log where a path trick would land: beside and above the chats folder.
    const log = `${JSON.stringify({ version: 4, id: 'outside', createdAt: 0 })}\n${JSON.stringify({
      seq: 0,
      at: 0,
      type: 'message',
      role: 'user',
      content: [{ kind: 'text', text: SECRET }],
    })}\n`;
    mkdirSync(join(gw.dataDir, 'chats'), { recursive: true });
    writeFileSync(join(gw.dataDir, 'outside.jsonl'), log);
    writeFileSync(join(gw.dataDir, 'chats', 'inside.jsonl.bak'), log);
    planted = log;
  });
  after(() => gw.close());

  const trickyIds = [
    '..%2foutside',
    '%2e%2e%2foutside',
    '%2E%2E%2Foutside',
    '..%5coutside',
    '%2e%2e',
    '%2e',
    '..',
    '.',
    'a%00b',
    '%00',
    'outside%00.jsonl',
    '%252e%252e%252foutside',
    '%c0%ae%c0%ae%2foutside',
    '..%2f..%2f..%2f..%2fetc%2fpasswd',
    'inside.jsonl.bak%00',
    '%ZZ',
    'x'.repeat(129),
    'y'.repeat(5000),
  ];

  test('every session route answers a path trick with a clear 400 or 404 and reads nothing outside', async () => {
    for (const id of trickyIds) {
      for (const path of [
        `/v1/sessions/${id}`,
        `/v1/sessions/${id}/events`,
        `/v1/sessions/${id}/events?offset=0&length=5`,
      ]) {
        const a = await raw(gw, 'GET', path);
        assertOpenAiError(a, [400, 404], path.slice(0, 80));
        assert.ok(!a.text.includes(SECRET), `${path.slice(0, 80)} leaked the planted log`);
      }
    }
    // Unencoded dots are resolved by nobody: the path simply matches no route.
    assertOpenAiError(await raw(gw, 'GET', '/v1/sessions/../outside'), [404], 'raw ..');
    assertOpenAiError(await raw(gw, 'GET', '/v1/sessions/../../outside/events'), [404], 'raw ../..');
  });

  test('POST /v1/sessions refuses ids with path tricks and creates nothing', async () => {
    const before = filesUnder(gw.dataDir);
    for (const id of [
      '../outside',
      '..',
      '.',
      'a/b',
      'a\\b',
      'a\u0000b',
      '%2e%2e%2foutside',
      'x'.repeat(129),
      42,
      { id: 'x' },
    ]) {
      const a = await raw(gw, 'POST', '/v1/sessions', {}, JSON.stringify({ id }));
      assertOpenAiError(a, [400], `POST id ${JSON.stringify(id).slice(0, 40)}`);
    }
    assert.deepEqual(filesUnder(gw.dataDir), before);
  });

  test('x-session-id with path tricks is a 400 in the endpoint’s shape; the provider is never called', async () => {
    gw.fake.reset();
    for (const id of [
      '../outside',
      '..%2foutside',
      '%2e%2e%2foutside',
      'a/b',
      '..',
      '.',
      'a b',
      'x'.repeat(129),
      'y'.repeat(5000),
    ]) {
      const a = await raw(gw, 'POST', '/v1/chat/completions', { 'x-session-id': id }, chatBody());
      assertOpenAiError(a, [400], `x-session-id ${id.slice(0, 40)}`);
      assert.equal((a.json?.error as { param: string }).param, 'x-session-id');
      assertAnthropicError(
        await raw(gw, 'POST', '/v1/messages', { 'x-session-id': id }, messagesBody()),
        400,
        id.slice(0, 40),
      );
      // A parent is only metadata in the header, never a path; `.` and `..` are still refused above.
      if (id === '.' || id === '..') continue;
      const parent = await raw(gw, 'POST', '/v1/chat/completions', { 'x-session-parent': id }, chatBody());
      assertOpenAiError(parent, [400], `x-session-parent ${id.slice(0, 40)}`);
    }
    assert.equal(gw.fake.requests.length, 0);
  });

  test('client-sent conversation ids with path tricks are ignored, never used as a path', async () => {
    for (const [name, value] of [
      ['x-claude-code-session-id', '../../outside'],
      ['session_id', '..%2foutside'],
      ['x-opencode-session', '../../../etc/passwd'],
    ] as const) {
      const a = await raw(gw, 'POST', '/v1/chat/completions', { [name]: value }, chatBody(`ignored ${name}`));
      assert.equal(a.status, 200, a.text);
    }
  });

  test('image media types with path tricks never name a file: attachments are named by content hash', async () => {
    const png = makePng(3, 2).toString('base64');
    const openai = await raw(
      gw,
      'POST',
      '/v1/chat/completions',
      {},
      JSON.stringify({
        model: 'gpt-test',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image_url', image_url: { url: `data:image/png/../../../../evil;base64,${png}` } },
              {
                type: 'image_url',
                image_url: {
                  url: `data:../../evil.sh;base64,${Buffer.from('#!/bin/sh').toString('base64')}`,
                },
              },
            ],
          },
        ],
      }),
    );
    assert.equal(openai.status, 200, openai.text);
    const anthropic = await raw(
      gw,
      'POST',
      '/v1/messages',
      {},
      JSON.stringify({
        model: 'claude-test',
        max_tokens: 5,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'base64', media_type: '../../../evil', data: png } }],
          },
        ],
      }),
    );
    assert.equal(anthropic.status, 200, anthropic.text);
    for (const file of filesUnder(gw.dataDir)) {
      const ok =
        file === 'outside.jsonl' ||
        /^chats\/[A-Za-z0-9._:-]{1,128}\.jsonl(\.bak)?$/.test(file) ||
        /^checkpoints\/[A-Za-z0-9._:-]{1,128}\/[A-Za-z0-9._:-]+\.json$/.test(file) ||
        // The file store's chat index (one SQLite file and its journal).
        /^chat-index\.sqlite(-wal|-shm|-journal)?$/.test(file) ||
        // The running gateway's claim on its dataDir (chat-log/data-dir-claim.ts).
        file === 'gateway.lock' ||
        // The usage ledger: one file per UTC day, named by the date only (and, while a background
        // flush writes it, its temporary copy, renamed over it next).
        /^usage\/\d{4}-\d{2}-\d{2}\.json(\.tmp)?$/.test(file) ||
        // A background checkpoint's temporary file, named by random hex before its rename.
        /^checkpoints\/[A-Za-z0-9._:-]{1,128}\/\.[0-9a-f]{16}\.tmp$/.test(file) ||
        /^attachments\/[0-9a-f]{64}\.(png|jpg|webp|gif)$/.test(file);
      assert.ok(ok, `unexpected file ${relative(gw.dataDir, join(gw.dataDir, file))}`);
    }
    assert.ok(
      filesUnder(gw.dataDir).some((f) => f.startsWith('attachments/')),
      'the images were stored',
    );
    assert.equal(
      readFileSync(join(gw.dataDir, 'outside.jsonl'), 'utf8'),
      planted,
      'the planted log is untouched',
    );
  });
});

describe('input safety: oversize, deep and huge bodies', () => {
  let gw: TestGateway;
  let small: TestGateway;
  before(async () => {
    gw = await startGateway();
    small = await startGateway({ fakeProvider: gw.fake, config: { server: { bodyLimit: '64kb' } } });
  });
  after(async () => {
    await small.close();
    await gw.close();
  });

  test('a body over the limit is a 413 in each endpoint’s shape, also when streamed without a length', async () => {
    const big = 'x'.repeat(100 * 1024);
    const a = await raw(small, 'POST', '/v1/chat/completions', {}, chatBody(big));
    assertOpenAiError(a, [413], 'openai');
    assert.equal((a.json?.error as { code: string }).code, 'ODA_ERR_BODY_TOO_LARGE');
    assertAnthropicError(await raw(small, 'POST', '/v1/messages', {}, messagesBody(big)), 413, 'anthropic');
    assertAnthropicError(
      await raw(small, 'POST', '/v1/messages/count_tokens', {}, messagesBody(big)),
      413,
      'count_tokens',
    );
    assertOpenAiError(
      await raw(small, 'POST', '/v1/sessions', {}, JSON.stringify({ id: 'x', cwd: `/${big}` })),
      [413],
      'sessions',
    );
    const chunked = await fetch(`${small.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([chatBody(big)]).stream(),
      duplex: 'half',
    } as RequestInit);
    assert.equal(chunked.status, 413);
    assert.equal(small.fake.requests.length, 0);
  });

  test('deeply nested JSON is a 400 wherever it sits; nesting real requests use passes', async () => {
    gw.fake.reset();
    const N = 100_000;
    const deepArray = '['.repeat(N) + ']'.repeat(N);
    const deepObject = '{"a":'.repeat(N) + '1' + '}'.repeat(N);
    const cases: Array<[string, string, string]> = [
      ['/v1/chat/completions', 'unterminated', '['.repeat(N)],
      ['/v1/chat/completions', 'array body', deepArray],
      ['/v1/chat/completions', 'object body', deepObject],
      [
        '/v1/chat/completions',
        'in content',
        `{"model":"gpt-test","messages":[{"role":"user","content":${deepArray}}]}`,
      ],
      [
        '/v1/chat/completions',
        'in an unknown field',
        `{"model":"gpt-test","messages":[{"role":"user","content":"x"}],"extra":${deepObject}}`,
      ],
      [
        '/v1/messages',
        'in tool input',
        `{"model":"claude-test","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"t","input":${deepObject}}]}]}`,
      ],
      [
        '/v1/messages',
        'in metadata',
        `{"model":"claude-test","max_tokens":5,"metadata":${deepObject},"messages":[{"role":"user","content":"x"}]}`,
      ],
      ['/v1/messages/count_tokens', 'in messages', `{"model":"claude-test","messages":${deepArray}}`],
      ['/v1/sessions', 'in cwd', `{"id":"deep","cwd":${deepArray}}`],
    ];
    for (const [path, what, body] of cases) {
      const a = await raw(gw, 'POST', path, {}, body);
      if (path.startsWith('/v1/messages')) assertAnthropicError(a, 400, what);
      else assertOpenAiError(a, [400], what);
    }
    assert.equal(gw.fake.requests.length, 0);
    const schema = '{"type":"object","properties":{"a":'.repeat(60) + '{"type":"string"}' + '}}'.repeat(60);
    const tools = `[{"type":"function","function":{"name":"deep","parameters":${schema}}}]`;
    const fine = await raw(
      gw,
      'POST',
      '/v1/chat/completions',
      {},
      `{"model":"gpt-test","messages":[{"role":"user","content":"x"}],"tools":${tools}}`,
    );
    assert.equal(fine.status, 200, fine.text);
    assert.equal(gw.fake.requests[0]!.raw.toString('utf8').includes(schema), true, 'forwarded as sent');
  });

  test('huge JSON neither crashes nor stalls the gateway; a normal request succeeds afterwards', async () => {
    gw.fake.reset();
    gw.fake.script(
      { json: openaiCompletion('gpt-test', 'ok', 1) },
      { json: anthropicMessage('claude-test', 'ok', 1) },
    );
    const started = performance.now();
    const manyValues = JSON.stringify({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'many' }],
      extra: Array.from({ length: 1_100_000 }, () => 0),
    });
    const refused = await raw(gw, 'POST', '/v1/chat/completions', {}, manyValues);
    assertOpenAiError(refused, [413], 'too many values');
    assert.match((refused.json?.error as { message: string }).message, /more than 1000000 JSON values/);
    const longText = await raw(
      gw,
      'POST',
      '/v1/chat/completions',
      {},
      chatBody('x'.repeat(20 * 1024 * 1024)),
    );
    assert.equal(longText.status, 200);
    const manyParts = await raw(
      gw,
      'POST',
      '/v1/messages',
      {},
      JSON.stringify({
        model: 'claude-test',
        max_tokens: 5,
        messages: [
          {
            role: 'user',
            content: Array.from({ length: 50_000 }, (_, i) => ({ type: 'text', text: `part ${i}` })),
          },
        ],
      }),
    );
    assert.equal(manyParts.status, 200, manyParts.text.slice(0, 200));
    assert.ok(performance.now() - started < 20_000, `took ${Math.round(performance.now() - started)} ms`);
    const normal = await raw(gw, 'POST', '/v1/chat/completions', {}, chatBody('still alive?'));
    assert.equal(normal.status, 200);
    assert.equal((await fetch(`${gw.url}/healthz`)).status, 200);
  });
});
