/**
 * The log viewer's routes over HTTP (SPEC section 12): the page's headers, what the model received
 * for a real trimmed chat, the attachment route's scoping and headers, and the live tail. Real
 * gateways in front of the fake provider; responses are checked against openapi.yaml.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../../server/app.ts';
import { parseConfig } from '../../config/config.ts';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';
import { loadOpenApi, validateResponse, validateSchema } from '../helpers/openapi-validator.ts';
import { newKey } from '../../server/cli-keys.ts';
import {
  DEMO_MODELS,
  imageSetAsideChat,
  longToolOutput,
  openaiCall,
  trimmedToolResultChat,
} from '../browser/demo-chats.ts';

const doc = loadOpenApi();
const MARKER = '\n\n[... tool result middle pruned ...]\n\n';
const research = newKey();
const design = newKey();
const admin = newKey();

async function get(gw: TestGateway, path: string, key?: string) {
  const res = await fetch(`${gw.url}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const type = res.headers.get('content-type') ?? '';
  const body: unknown = type.includes('json') ? await res.json() : Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body };
}

function documented(method: string, path: string, status: number, body: unknown, type = 'application/json') {
  assert.deepEqual(
    validateResponse(doc, method, path, status, body, type),
    [],
    `${method} ${path} ${status}`,
  );
}

/** Reads SSE events from a streaming response until `until` says stop (the suites' timeouts bound it). */
async function readSse(
  res: Response,
  until: (events: Array<{ event: string; data: string; id?: string }>) => boolean,
): Promise<Array<{ event: string; data: string; id?: string }>> {
  const events: Array<{ event: string; data: string; id?: string }> = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  while (!until(events)) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let at: number;
    while ((at = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, at);
      buffer = buffer.slice(at + 2);
      const e: { event: string; data: string; id?: string } = { event: 'message', data: '' };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) e.event = line.slice(7);
        else if (line.startsWith('data: ')) e.data += line.slice(6);
        else if (line.startsWith('id: ')) e.id = line.slice(4);
      }
      if (e.data) events.push(e);
    }
  }
  await reader.cancel();
  return events;
}

describe('log viewer routes: open gateway', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let original: string;
  before(async () => {
    gw = await startGateway({ config: { models: DEMO_MODELS }, fake: { imageLimit: 1 } });
    original = await trimmedToolResultChat({ url: gw.url, session: 'ci-fix' });
    await imageSetAsideChat({ url: gw.url, session: 'screens' });
  });
  after(() => gw.close());

  test('GET /ui: the page with a CSP that forbids inline script, remote loads and framing', async () => {
    const res = await get(gw, '/ui');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "object-src 'none'",
      "base-uri 'none'",
      "frame-ancestors 'none'",
      "img-src 'self' blob:",
      "require-trusted-types-for 'script'",
    ]) {
      assert.ok(csp.includes(directive), `CSP has ${directive}: ${csp}`);
    }
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const html = (res.body as Buffer).toString('utf8');
    assert.match(html, /<script type="module" src="\/ui\/app\.js"><\/script>/);
    assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]/, 'no inline script in the page');
    assert.doesNotMatch(html, /https?:\/\//, 'no remote URL in the page');
    documented('get', '/ui', 200, html, res.headers.get('content-type')!);
  });

  test('GET /ui/<file>: the page files with their types; anything else is not served', async () => {
    const js = await get(gw, '/ui/app.js');
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(js.headers.get('x-content-type-options'), 'nosniff');
    // Every stylesheet the page links is served as CSS (a missing one would leave the page unstyled).
    const page = ((await get(gw, '/ui')).body as Buffer).toString('utf8');
    const sheets = [...page.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(sheets, ['/ui/style.css', '/ui/conversation.css']);
    for (const sheet of sheets) {
      const css = await get(gw, sheet);
      assert.equal(css.status, 200, sheet);
      assert.match(css.headers.get('content-type') ?? '', /^text\/css/, sheet);
    }
    for (const path of [
      '/ui/tsconfig.json',
      '/ui/..%2Fpackage.json',
      '/ui/%2e%2e%2fpackage.json',
      '/ui/nope.js',
    ]) {
      assert.equal((await get(gw, path)).status, 404, path);
    }
  });

  test('received: a trimmed tool result as the model got it, with its decision; unchanged messages left out', async () => {
    const res = await get(gw, '/v1/sessions/ci-fix/received?offset=0&length=100');
    assert.equal(res.status, 200);
    documented('get', '/v1/sessions/ci-fix/received', 200, res.body);
    const body = res.body as {
      data: Array<{ seq: number; content: Array<Record<string, unknown>>; effects: unknown[] }>;
    };
    assert.equal(body.data.length, 1, 'only the tool message changed');
    const [message] = body.data;
    const inner = message!.content[0]!.content as Array<{ text: string }>;
    const cps = Array.from(original);
    assert.equal(inner[0]!.text, cps.slice(0, 4096).join('') + MARKER + cps.slice(-1024).join(''));
    const events = (await get(gw, '/v1/sessions/ci-fix/events')).body as {
      events: Array<Record<string, unknown>>;
    };
    const trim = events.events.find((e) => e.type === 'tool-result-trimmed')!;
    assert.deepEqual(message!.effects, [
      {
        by: 'trimmed',
        path: [0, 0],
        callId: 'call_run_tests',
        decisionSeq: trim.seq,
        trigger: 'threshold',
        originalChars: cps.length,
        headChars: 4096,
        tailChars: 1024,
      },
    ]);
    // What the provider received is exactly that form.
    const sent = gw.fake.requests.find((r) => r.json?.model === 'small-demo')!.json!;
    const wireTool = (sent.messages as Array<{ role: string; content: string }>).find(
      (m) => m.role === 'tool',
    );
    assert.equal(wireTool?.content, inner[0]!.text);
  });

  test('received: paging past the end is empty; a bad offset is a 400', async () => {
    const past = await get(gw, '/v1/sessions/ci-fix/received?offset=500');
    assert.deepEqual(past.body, { object: 'list', data: [], offset: 500, next_offset: 500 });
    const bad = await get(gw, '/v1/sessions/ci-fix/received?offset=-1');
    assert.equal(bad.status, 400);
    documented('get', '/v1/sessions/ci-fix/received', 400, bad.body);
  });

  test('received: an image set aside shows its note in the image place', async () => {
    const res = await get(gw, '/v1/sessions/screens/received');
    const body = res.body as {
      data: Array<{ content: Array<Record<string, unknown>>; effects: Array<Record<string, unknown>> }>;
    };
    assert.equal(body.data.length, 1);
    const note = body.data[0]!.content[1]!;
    assert.equal(note.kind, 'text');
    assert.match(String(note.text), /^\[Image #1 set aside \(image\/png, 160x100, /);
    assert.equal(body.data[0]!.content[2]!.kind, 'image', 'the newer image was sent');
    assert.deepEqual(
      body.data[0]!.effects.map((e) => [e.by, e.ordinal]),
      [['set-aside', 1]],
    );
  });

  test('attachments: a referenced image with its type and nosniff; others 404; a bad hash 400', async () => {
    const events = (await get(gw, '/v1/sessions/screens/events')).body as {
      events: Array<{ type: string; content?: Array<{ kind: string; attachment?: { sha256: string } }> }>;
    };
    const images = events.events
      .flatMap((e) => e.content ?? [])
      .filter((p) => p.kind === 'image')
      .map((p) => p.attachment!.sha256);
    assert.equal(images.length, 2);
    const res = await get(gw, `/v1/sessions/screens/attachments/${images[0]}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.equal(
      createHash('sha256')
        .update(res.body as Buffer)
        .digest('hex'),
      images[0],
    );

    // The same image exists on disk, but the other chat does not reference it.
    const elsewhere = await get(gw, `/v1/sessions/ci-fix/attachments/${images[0]}`);
    assert.equal(elsewhere.status, 404);
    documented('get', `/v1/sessions/ci-fix/attachments/${images[0]}`, 404, elsewhere.body);
    assert.equal((await get(gw, `/v1/sessions/screens/attachments/${'0'.repeat(64)}`)).status, 404);
    const bad = await get(gw, '/v1/sessions/screens/attachments/..%2F..%2Fetc%2Fpasswd');
    assert.equal(bad.status, 400);
    assert.equal((await get(gw, `/v1/sessions/nobody/attachments/${images[0]}`)).status, 404);
  });

  test('tail: events appended after it starts arrive as SSE batches with their next offset', async () => {
    const created = await fetch(`${gw.url}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'live-one' }),
    });
    assert.equal(created.status, 201);
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/v1/sessions/live-one/tail`, { signal: controller.signal });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const reading = readSse(res, (events) =>
      events.some((e) => e.event === 'events' && e.data.includes('"response"')),
    );
    await openaiCall(
      { url: gw.url, session: 'live-one' },
      { model: 'gpt-live', messages: [{ role: 'user', content: 'live tail check' }] },
    );
    const events = await reading;
    controller.abort();
    assert.deepEqual(JSON.parse(events[0]!.data), { next: 0 }, 'ready names where the tail starts');
    const batches = events
      .filter((e) => e.event === 'events')
      .map((e) => JSON.parse(e.data) as { events: Array<{ seq: number; type: string }>; next: number });
    const seqs = batches.flatMap((b) => b.events.map((e) => e.seq));
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i),
      'every event once, in order, from the start',
    );
    const last = batches.at(-1)!;
    assert.equal(last.next, seqs.at(-1)! + 1);
    assert.equal(events.filter((e) => e.event === 'events').at(-1)!.id, String(last.next));
    assert.ok(JSON.stringify(batches).includes('live tail check'));
    for (const batch of batches) {
      assert.deepEqual(validateSchema(doc, '#/components/schemas/SessionTailBatch', batch), []);
    }
  });

  test('tail: a shutdown ends the tail, so the server closes without waiting out its grace', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'oda-ui-tail-'));
    const gateway = createApp(parseConfig({ dataDir, logLevel: 'silent' }));
    const server = await new Promise<Server>((resolve) => {
      const s = gateway.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const created = await fetch(`${url}/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'quiet' }),
      });
      assert.equal(created.status, 201);
      const res = await fetch(`${url}/v1/sessions/quiet/tail`);
      const reading = readSse(res, (events) => events.some((e) => e.event === 'end'));
      // What main.ts does on SIGTERM: stop accepting, close idle connections, wait for the rest.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const events = await reading;
      assert.deepEqual(JSON.parse(events.at(-1)!.data), { reason: 'shutdown' });
      await closed;
    } finally {
      server.closeAllConnections();
      await gateway.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test(
    'tail: a chat whose log file is removed ends its tail ("gone") and is a 404 from then on',
    { skip: testStoreIsRedis && 'a file store test' },
    async () => {
      await openaiCall(
        { url: gw.url, session: 'removed-live' },
        { model: 'gpt-live', messages: [{ role: 'user', content: 'soon removed' }] },
      );
      // A tail that never ends fails the test here rather than at the suite's timeout.
      const res = await fetch(`${gw.url}/v1/sessions/removed-live/tail`, {
        signal: AbortSignal.timeout(5000),
      });
      assert.equal(res.status, 200);
      // Removed by hand while the tail waits at the end of the log, where it reads nothing.
      rmSync(join(gw.dataDir, 'chats', 'removed-live.jsonl'));
      const events = await readSse(res, (ev) => ev.some((e) => e.event === 'end'));
      assert.deepEqual(
        events.map((e) => e.event),
        ['ready', 'end'],
      );
      assert.deepEqual(JSON.parse(events[1]!.data), { reason: 'gone' });
      const after = await get(gw, '/v1/sessions/removed-live');
      assert.equal(after.status, 404);
      assert.equal((await get(gw, '/v1/sessions/removed-live/tail')).status, 404);
    },
  );

  test('tail: from= replays from an offset; an unknown chat is a 404', async () => {
    const res = await fetch(`${gw.url}/v1/sessions/ci-fix/tail?from=0`);
    const events = await readSse(res, (ev) => ev.some((e) => e.event === 'events'));
    const first = JSON.parse(events.find((e) => e.event === 'events')!.data) as {
      events: Array<{ seq: number }>;
    };
    assert.equal(first.events[0]!.seq, 0);
    const bad = await get(gw, '/v1/sessions/ci-fix/tail?from=abc');
    assert.equal(bad.status, 400);
    assert.equal((bad.body as { error: { param: string } }).error.param, 'from');
    documented('get', '/v1/sessions/ci-fix/tail', 400, bad.body);
    const badLimit = await get(gw, '/v1/sessions?limit=0');
    assert.equal((badLimit.body as { error: { param: string } }).error.param, 'limit');
    documented('get', '/v1/sessions', 400, badLimit.body);
    const missing = await get(gw, '/v1/sessions/nobody/tail');
    assert.equal(missing.status, 404);
    documented('get', '/v1/sessions/nobody/tail', 404, missing.body);
  });
});

describe('log viewer routes: teams', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let researchImage: string;
  before(async () => {
    gw = await startGateway({
      config: {
        models: DEMO_MODELS,
        teams: [
          { name: 'research', keys: [research.hash] },
          { name: 'design', keys: [design.hash] },
        ],
        adminKeys: [admin.hash],
      },
      fake: { imageLimit: 1 },
    });
    await imageSetAsideChat({ url: gw.url, session: 'shots', key: research.key });
    const events = (await get(gw, '/v1/sessions/shots/events', research.key)).body as {
      events: Array<{ content?: Array<{ kind: string; attachment?: { sha256: string } }> }>;
    };
    researchImage = events.events.flatMap((e) => e.content ?? []).find((p) => p.kind === 'image')!.attachment!
      .sha256;
  });
  after(() => gw.close());

  test('the page needs no key; the data routes do', async () => {
    assert.equal((await get(gw, '/ui')).status, 200);
    assert.equal((await get(gw, '/ui/app.js')).status, 200);
    for (const path of [
      '/v1/sessions/shots/received',
      `/v1/sessions/shots/attachments/${researchImage}`,
      '/v1/sessions/shots/tail',
    ]) {
      const res = await get(gw, path);
      assert.equal(res.status, 401, path);
    }
  });

  test("another team's chat is a 404 on every viewer route; its own team and admins see it", async () => {
    for (const path of [
      '/v1/sessions/shots/received',
      `/v1/sessions/shots/attachments/${researchImage}`,
      '/v1/sessions/shots/tail',
    ]) {
      assert.equal((await get(gw, path, design.key)).status, 404, `design: ${path}`);
      assert.equal(
        (await get(gw, path.replace('shots', 't:research:shots'), design.key)).status,
        404,
        `design, full id: ${path}`,
      );
    }
    assert.equal((await get(gw, '/v1/sessions/shots/received', research.key)).status, 200);
    const image = await get(gw, `/v1/sessions/shots/attachments/${researchImage}`, research.key);
    assert.equal(image.status, 200);
    assert.equal(
      (await get(gw, `/v1/sessions/t:research:shots/attachments/${researchImage}`, admin.key)).status,
      200,
    );
    assert.equal(
      (await get(gw, `/v1/sessions/shots/attachments/${researchImage}`, admin.key)).status,
      404,
      'admins use ids as they are',
    );
  });
});

describe('log viewer routes: a pruned chat', { timeout: 60_000 }, () => {
  let gw: TestGateway;
  let output: string;
  before(async () => {
    gw = await startGateway({ config: { models: DEMO_MODELS, pruning: { mode: 'cache-ttl', ttl: '5m' } } });
    output = longToolOutput(300, 'THE-MIDDLE');
    // No cache clock yet (treated as cold), over softTrimRatio of the 8k window: the old tool
    // result (before the last 3 assistant turns) is soft-trimmed.
    await openaiCall(
      { url: gw.url, session: 'pruned' },
      {
        model: 'small-prune',
        messages: [
          { role: 'user', content: 'start' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_old', type: 'function', function: { name: 'run_tests', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_old', content: output },
          { role: 'assistant', content: 'a1' },
          { role: 'user', content: 'u2' },
          { role: 'assistant', content: 'a2' },
          { role: 'user', content: 'u3' },
          { role: 'assistant', content: 'a3' },
          { role: 'user', content: 'u4' },
        ],
      },
    );
  });
  after(() => gw.close());

  test('received: the soft-trimmed result with its note, named as the pruning pass', async () => {
    const events = (
      (await get(gw, '/v1/sessions/pruned/events')).body as { events: Array<Record<string, unknown>> }
    ).events;
    const pass = events.find((e) => e.type === 'pruning');
    assert.ok(pass, 'the gateway pruned');
    const res = await get(gw, '/v1/sessions/pruned/received');
    documented('get', '/v1/sessions/pruned/received', 200, res.body);
    const body = res.body as { data: Array<{ content: Array<Record<string, unknown>>; effects: unknown[] }> };
    assert.equal(body.data.length, 1);
    const text = (body.data[0]!.content[0]!.content as Array<{ text: string }>)[0]!.text;
    const n = Array.from(output).length;
    assert.equal(
      text,
      `${output.slice(0, 1500)}\n...\n${output.slice(-1500)}\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of ${n} chars.]`,
    );
    assert.deepEqual(body.data[0]!.effects, [
      { by: 'pruned', path: [0, 0], callId: 'call_old', action: 'soft', decisionSeq: pass.seq },
    ]);
    const wire = gw.fake.requests.at(-1)!.json!.messages as Array<{ role: string; content: string }>;
    assert.equal(wire.find((m) => m.role === 'tool')?.content, text, 'what the provider received');
  });
});
