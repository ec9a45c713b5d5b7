/**
 * The chat log through the gateway (SPEC sections 2 and 6, issue 3): official SDKs -> gateway ->
 * fake provider, then the log read back through the sessions API (and the attachments on disk).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { ContentPart, Event, Header } from '../../chat-log/format/current.ts';
import { makeGif, makeJpeg, makePng, makeWebp } from '../../chat-log/test-images.ts';
import { anthropicMessage, openaiCompletion } from '../fake-provider/fake-bodies.ts';
import type { RecordedRequest } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import {
  chatDriver,
  getEvents,
  getJson,
  getSession,
  ofType,
  type CallOutcome,
  type ChatDriver,
  type Format,
} from '../helpers/sdk-chat-drivers.ts';

const formats: Format[] = ['openai', 'anthropic'];
const ANSWER = 'Hello from the fake provider.';
const modelOf = (format: Format) => (format === 'openai' ? 'gpt-test' : 'claude-test');
const chatPath = (format: Format) => (format === 'openai' ? '/v1/chat/completions' : '/v1/messages');

/** One log message as a line: role, then each part. */
function summary(content: readonly ContentPart[]): string[] {
  return content.map((c) => {
    switch (c.kind) {
      case 'text':
        return `text(${c.text})`;
      case 'tool-call':
        return `call(${c.id},${c.name},${c.args})`;
      case 'tool-result':
        return `result(${c.callId},${c.toolName ?? '?'},${c.failed},${c.content.map((x) => (x.kind === 'text' ? x.text : x.kind)).join('|')})`;
      case 'image':
        return `image(${c.attachment?.mediaType ?? c.url ?? '?'})`;
      default:
        return c.kind;
    }
  });
}

function messageLines(events: readonly Event[]): string[] {
  return ofType(events, 'message').map((m) => `${m.role}: ${summary(m.content).join(' ')}`);
}

function assertContiguous(events: readonly Event[]): void {
  assert.deepEqual(
    events.map((e) => e.seq),
    events.map((_, i) => i),
    'seq contiguous from 0',
  );
}

async function errorOf(res: Response): Promise<{ status: number; message: string }> {
  const body = (await res.json()) as { error: { message: string } };
  return { status: res.status, message: body.error.message };
}

describe('the chat log of a multi-turn chat', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  for (const format of formats) {
    for (const naming of ['derived', 'explicit'] as const) {
      test(`${format}, ${naming} id: every message logged once, in order, with each request and response`, async () => {
        const explicit = `log-${format}`;
        const driver = chatDriver(format, gw.url, gw.fake, modelOf(format), {
          system: `You manage files (${naming}).`,
          tools: ['list_files', 'read_file'],
          headers: naming === 'explicit' ? { 'x-session-id': explicit } : {},
        });
        const calls: Array<CallOutcome & { streamed: boolean }> = [];
        const call = async (stream: boolean) => {
          const out = await driver.call({ stream });
          assert.equal(out.status, 200);
          calls.push({ ...out, streamed: stream });
          return out;
        };

        // Turn 1, not streamed: a tool call, its result, the answer.
        driver.user('List the files in src.');
        gw.fake.script(driver.toolCallReply('call_list', 'list_files', { path: '/src' }));
        assert.deepEqual((await call(false)).toolCalls, [{ id: 'call_list', name: 'list_files' }]);
        driver.toolResult('call_list', 'main.ts\nutil.ts');
        assert.equal((await call(false)).answerText, ANSWER);
        // Turn 2, streamed: a streamed tool call, its result, a streamed answer.
        driver.user('Open main.ts.');
        gw.fake.script(driver.toolCallReply('call_read', 'read_file', { path: '/src/main.ts' }, true));
        assert.deepEqual((await call(true)).toolCalls, [{ id: 'call_read', name: 'read_file' }]);
        driver.toolResult('call_read', 'export const main = 1;');
        assert.equal((await call(true)).answerText, ANSWER);
        // Turn 3, not streamed.
        driver.user('Thanks!');
        assert.equal((await call(false)).answerText, ANSWER);

        // One chat: the same x-session-id on every answer.
        const ids = new Set(calls.map((c) => c.headers.get('x-session-id')));
        assert.equal(ids.size, 1);
        const id = [...ids][0]!;
        if (naming === 'explicit') assert.equal(id, explicit);
        else assert.match(id, /^chat-[0-9a-f]{32}$/);

        const events = await getEvents(gw.url, id);
        assertContiguous(events);
        const lookFirst = format === 'anthropic' ? 'text(Let me look.) ' : '';
        assert.deepEqual(messageLines(events), [
          'user: text(List the files in src.)',
          `model: ${lookFirst}call(call_list,list_files,{"path":"/src"})`,
          'tool: result(call_list,list_files,false,main.ts\nutil.ts)',
          `model: text(${ANSWER})`,
          'user: text(Open main.ts.)',
          `model: ${lookFirst}call(call_read,read_file,{"path":"/src/main.ts"})`,
          'tool: result(call_read,read_file,false,export const main = 1;)',
          `model: text(${ANSWER})`,
          'user: text(Thanks!)',
          `model: text(${ANSWER})`,
        ]);
        // Per call: the client's new message, the request, the model's answer, the response.
        assert.deepEqual(
          events.map((e) => e.type),
          calls.flatMap(() => ['message', 'request', 'message', 'response']),
        );
        const requests = ofType(events, 'request');
        const responses = ofType(events, 'response');
        assert.equal(requests.length, 5);
        assert.equal(responses.length, 5);
        calls.forEach((c, i) => {
          const req = requests[i]!;
          const res = responses[i]!;
          assert.equal(req.requestId, c.headers.get('x-oda-request-id'));
          assert.equal(res.requestId, req.requestId);
          assert.equal(req.format, format);
          assert.equal(req.provider, `fake-${format}`);
          assert.equal(req.model, modelOf(format));
          assert.deepEqual(
            req.tools.map((t) => t.name),
            ['list_files', 'read_file'],
          );
          assert.equal(req.settings.stream === true, c.streamed);
          assert.equal(res.ok, true);
          assert.equal(res.status, 200);
          assert.ok(res.usage, `response ${i} has usage`);
          assert.ok(
            (res.usage.inputTokens ?? 0) > 0 && (res.usage.outputTokens ?? 0) > 0,
            `response ${i} usage counts`,
          );
        });
        // The streamed tool call's usage came from the stream itself.
        assert.deepEqual(
          { input: responses[2]!.usage?.inputTokens, output: responses[2]!.usage?.outputTokens },
          { input: 120, output: 9 },
        );
        // Tool definitions are never inlined: names and digests only.
        assert.ok(!JSON.stringify(events).includes('tool read_file'));

        const session = await getSession(gw.url, id);
        assert.equal(session.header.id, id);
        assert.equal(session.header.version, 5);
        assert.equal(session.snapshot.position, events.length - 1);
        assert.deepEqual(
          (
            session.snapshot.values.totals as {
              messageCount: number;
              requestCount: number;
              responseCount: number;
            }
          ).messageCount,
          10,
        );
      });
    }
  }

  test('a malformed x-session-id is a 400 in the endpoint format, and nothing is forwarded', async () => {
    const before = gw.fake.requests.length;
    const openai = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
    await assert.rejects(
      openai.chat.completions.create(
        { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-session-id': 'bad id/../x' } },
      ),
      (e: unknown) =>
        e instanceof OpenAI.BadRequestError && /x-session-id must be 1-128 characters/.test(e.message),
    );
    const anthropic = new Anthropic({ baseURL: gw.url, apiKey: 'sk-test', maxRetries: 0 });
    await assert.rejects(
      anthropic.messages.create(
        { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-session-id': 'x'.repeat(129) } },
      ),
      (e: unknown) =>
        e instanceof Anthropic.BadRequestError && /x-session-id must be 1-128 characters/.test(e.message),
    );
    assert.equal(gw.fake.requests.length, before);
  });
});

describe('branched chats', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: an edited earlier message starts a branch seeded with the shared events`, async () => {
      const driver = chatDriver(format, gw.url, gw.fake, modelOf(format), { system: 'You plan trips.' });
      driver.user('Plan a trip.');
      const first = await driver.call();
      const parentId = first.headers.get('x-session-id')!;
      driver.user('To Lisbon.');
      await driver.call();
      driver.user('In May.');
      assert.equal((await driver.call()).headers.get('x-session-id'), parentId);
      const parentBefore = await getEvents(gw.url, parentId);

      // The user edits the second message: same first message (same derived id), divergent history.
      const edited = driver.fork((messages) => messages.splice(messages.length - 4));
      edited.user('To Porto.');
      const branched = await edited.call();
      assert.equal(branched.answerText, ANSWER);
      const branchId = branched.headers.get('x-session-id')!;
      assert.notEqual(branchId, parentId);
      assert.match(branchId, /^[A-Za-z0-9._:-]{1,128}$/);
      // The provider got the edited history as sent.
      assert.equal(branched.provider.raw.toString('utf8'), branched.clientBody);

      // Shared: every event before the first logged message the branch does not share ('To Lisbon.').
      const shared = parentBefore.findIndex(
        (e) => e.type === 'message' && JSON.stringify(e.content).includes('To Lisbon.'),
      );
      assert.equal(shared, 4);
      const session = await getSession(gw.url, branchId);
      assert.equal(session.header.parent, parentId);
      assert.equal(session.header.seeded, true);
      assert.equal(session.header.inheritedEvents, shared);
      const branchEvents = await getEvents(gw.url, branchId);
      assertContiguous(branchEvents);
      assert.deepEqual(branchEvents.slice(0, shared), parentBefore.slice(0, shared));
      assert.deepEqual(messageLines(branchEvents), [
        'user: text(Plan a trip.)',
        `model: text(${ANSWER})`,
        'user: text(To Porto.)',
        `model: text(${ANSWER})`,
      ]);
      // The parent's log is unchanged.
      assert.deepEqual(await getEvents(gw.url, parentId), parentBefore);

      // Continuing the branch keeps the branch id, and its log grows.
      edited.user('In June.');
      const next = await edited.call();
      assert.equal(next.headers.get('x-session-id'), branchId);
      assert.deepEqual(messageLines(await getEvents(gw.url, branchId)).slice(4), [
        'user: text(In June.)',
        `model: text(${ANSWER})`,
      ]);
      // A client that names the branch explicitly lands there too.
      edited.user('With a car.');
      const named = await edited.call({ headers: { 'x-session-id': branchId } });
      assert.equal(named.headers.get('x-session-id'), branchId);
      // And the original conversation continues in the parent.
      driver.user('For a week.');
      assert.equal((await driver.call()).headers.get('x-session-id'), parentId);
      assert.deepEqual((await getEvents(gw.url, parentId)).slice(0, parentBefore.length), parentBefore);

      const { body } = await getJson<{ sessions: Array<{ id: string; parent?: string }> }>(
        `${gw.url}/v1/sessions`,
      );
      assert.deepEqual(
        body.sessions
          .filter((s) => s.id === branchId || s.id === parentId)
          .map((s) => [s.id, s.parent])
          .sort(),
        [
          [branchId, parentId],
          [parentId, undefined],
        ].sort(),
      );
    });
  }
});

describe('chat header metadata and the sessions API', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: x-session-* headers fill the header of the chat a request creates`, async () => {
      const id = `meta-${format}`;
      const driver = chatDriver(format, gw.url, gw.fake, modelOf(format), {
        headers: {
          'x-session-id': id,
          'x-session-cwd': '/home/dev/project',
          'x-session-origin': 'cli',
          'x-session-depth': '2',
          'x-session-preset': 'reviewer',
        },
      });
      driver.user('Hello.');
      const out = await driver.call();
      // Gateway headers are not forwarded.
      assert.deepEqual(
        Object.keys(out.provider.headers).filter((h) => h.startsWith('x-session-')),
        [],
      );
      const { header } = await getSession(gw.url, id);
      assert.deepEqual(header, {
        version: 5,
        id,
        createdAt: gw.clock.now(),
        cwd: '/home/dev/project',
        origin: 'cli',
        depth: 2,
        preset: 'reviewer',
        // A chat a model call creates says which conversation of its session it is (SPEC section 10).
        conversation: { kind: 'main', session: id },
      });
      // Only the request that creates the chat names its metadata.
      driver.user('Again.');
      await driver.call({ headers: { 'x-session-preset': 'other', 'x-session-cwd': '/elsewhere' } });
      assert.deepEqual((await getSession(gw.url, id)).header, header);
    });

    test(`${format}: a relative x-session-cwd is refused with 400, nothing forwarded`, async () => {
      const before = gw.fake.requests.length;
      const res = await fetch(`${gw.url}${chatPath(format)}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-session-id': `rel-${format}`,
          'x-session-cwd': 'relative/dir',
        },
        body: JSON.stringify({
          model: modelOf(format),
          max_tokens: 10,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { type?: string; error: { message: string } };
      assert.equal(body.error.message, 'cwd must be absolute');
      if (format === 'anthropic') assert.equal(body.type, 'error');
      assert.equal(gw.fake.requests.length, before);
      assert.equal((await fetch(`${gw.url}/v1/sessions/rel-${format}`)).status, 404);
    });
  }

  test('POST /v1/sessions creates a chat from a JSON body; a relative cwd is a 400', async () => {
    const post = (body: unknown) =>
      fetch(`${gw.url}/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const res = await post({
      id: 'posted-1',
      cwd: '/srv/app',
      origin: 'api',
      depth: 1,
      preset: 'default',
      parent: 'meta-openai',
    });
    assert.equal(res.status, 201);
    const created = (await res.json()) as { header: Header };
    const expected = {
      version: 5,
      id: 'posted-1',
      createdAt: gw.clock.now(),
      cwd: '/srv/app',
      origin: 'api',
      depth: 1,
      preset: 'default',
      parent: 'meta-openai',
    };
    assert.deepEqual(created.header, expected);
    const session = await getSession(gw.url, 'posted-1');
    assert.deepEqual(session.header, expected);
    assert.equal(session.snapshot.position, -1);
    assert.deepEqual(await getEvents(gw.url, 'posted-1'), []);

    // A model call naming it appends to it.
    const driver = chatDriver('openai', gw.url, gw.fake, 'gpt-test', {
      headers: { 'x-session-id': 'posted-1' },
    });
    driver.user('First message.');
    await driver.call();
    assert.deepEqual(messageLines(await getEvents(gw.url, 'posted-1')), [
      'user: text(First message.)',
      `model: text(${ANSWER})`,
    ]);

    const again = await post({ id: 'posted-1' });
    assert.equal(again.status, 409);
    const relative = await post({ id: 'posted-2', cwd: 'relative/dir' });
    assert.deepEqual(await errorOf(relative), { status: 400, message: 'cwd must be absolute' });
    assert.equal((await fetch(`${gw.url}/v1/sessions/posted-2`)).status, 404);
    const generated = await post({ origin: 'api' });
    assert.equal(generated.status, 201);
    assert.match(((await generated.json()) as { header: Header }).header.id, /^[A-Za-z0-9._:-]{1,128}$/);
  });

  test('GET /v1/sessions lists chats; events are read by offset and length', async () => {
    const t0 = gw.clock.now();
    const driver = chatDriver('openai', gw.url, gw.fake, 'gpt-test', {
      headers: { 'x-session-id': 'paged' },
    });
    for (let turn = 0; turn < 3; turn++) {
      driver.user(`Turn ${turn}.`);
      await driver.call();
      gw.clock.advance(1000);
    }
    const all = await getEvents(gw.url, 'paged');
    assert.equal(all.length, 12);

    const { body: list } = await getJson<{ sessions: Array<Record<string, unknown>> }>(
      `${gw.url}/v1/sessions`,
    );
    const paged = list.sessions.find((s) => s.id === 'paged');
    assert.deepEqual(paged, { id: 'paged', createdAt: t0, eventCount: 12, lastActivityAt: t0 + 2000 });
    for (const s of list.sessions) {
      assert.equal(typeof s.id, 'string');
      assert.equal(typeof s.createdAt, 'number');
      assert.equal(typeof s.eventCount, 'number');
      assert.equal(typeof s.lastActivityAt, 'number');
    }

    const page = await getJson<{ events: Event[]; next: number }>(
      `${gw.url}/v1/sessions/paged/events?offset=2&length=3`,
    );
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.events, all.slice(2, 5));
    assert.equal(page.body.next, 5);
    const rest = await getJson<{ events: Event[]; next: number }>(
      `${gw.url}/v1/sessions/paged/events?offset=10`,
    );
    assert.deepEqual(rest.body, { events: all.slice(10), next: 12, next_offset: null });
    for (const offset of [12, 50]) {
      const past = await getJson<{ events: Event[]; next: number }>(
        `${gw.url}/v1/sessions/paged/events?offset=${offset}&length=3`,
      );
      assert.equal(past.status, 200);
      assert.deepEqual(past.body.events, []);
    }
    const zero = await getJson<{ events: Event[] }>(`${gw.url}/v1/sessions/paged/events?offset=0&length=0`);
    assert.deepEqual(zero.body.events, []);

    assert.deepEqual(await errorOf(await fetch(`${gw.url}/v1/sessions/paged/events?offset=-1`)), {
      status: 400,
      message: 'read offset must be a non-negative safe integer, got -1',
    });
    assert.deepEqual(await errorOf(await fetch(`${gw.url}/v1/sessions/paged/events?length=abc`)), {
      status: 400,
      message: 'read length must be a non-negative safe integer, got abc',
    });
    assert.equal((await fetch(`${gw.url}/v1/sessions/no-such-chat`)).status, 404);
    assert.equal((await fetch(`${gw.url}/v1/sessions/no-such-chat/events`)).status, 404);
    assert.equal((await fetch(`${gw.url}/v1/sessions/no-such-chat/events?offset=-1`)).status, 404);
  });
});

describe('images in the chat log', () => {
  for (const format of formats) {
    test(`${format}: each image lands once in dataDir/attachments by content hash, read-only, described in the message event`, async () => {
      const gw = await startGateway();
      try {
        const png = makePng(33, 17, 9);
        const gif = makeGif(8, 5);
        const jpeg = makeJpeg(640, 480);
        const webp = makeWebp(20, 10, 'VP8X');
        const driver = chatDriver(format, gw.url, gw.fake, modelOf(format), {
          tools: ['screenshot'],
          headers: { 'x-session-id': `images-${format}` },
        });
        driver.user([
          { text: 'Look at these.' },
          { image: png },
          { image: gif, mediaType: 'image/gif' },
          { image: jpeg, mediaType: 'image/jpeg' },
        ]);
        gw.fake.script(driver.toolCallReply('call_shot', 'screenshot', {}));
        await driver.call();
        // The same PNG again inside a tool result, and a WebP.
        driver.toolResult('call_shot', [
          { text: 'Here.' },
          { image: png },
          { image: webp, mediaType: 'image/webp' },
        ]);
        await driver.call();
        // The whole history (all images) is sent again.
        driver.user('And now?');
        await driver.call();

        const expected = [
          { bytes: png, mediaType: 'image/png', ext: 'png', width: 33, height: 17 },
          { bytes: gif, mediaType: 'image/gif', ext: 'gif', width: 8, height: 5 },
          { bytes: jpeg, mediaType: 'image/jpeg', ext: 'jpg', width: 640, height: 480 },
          { bytes: webp, mediaType: 'image/webp', ext: 'webp', width: 20, height: 10 },
        ].map((x) => ({ ...x, sha256: createHash('sha256').update(x.bytes).digest('hex') }));
        const dir = join(gw.dataDir, 'attachments');
        const files = readdirSync(dir)
          .filter((f) => !f.startsWith('.'))
          .sort();
        assert.deepEqual(
          files,
          expected.map((x) => `${x.sha256}.${x.ext}`).sort(),
          'one file per distinct image',
        );
        for (const x of expected) {
          const file = join(dir, `${x.sha256}.${x.ext}`);
          assert.equal(statSync(file).mode & 0o777, 0o444, `${x.mediaType} is read-only`);
          assert.deepEqual(readFileSync(file), x.bytes);
        }

        const events = await getEvents(gw.url, `images-${format}`);
        const attachmentsOf = (parts: readonly ContentPart[]) =>
          parts.flatMap((c) =>
            c.kind === 'image'
              ? [c.attachment]
              : c.kind === 'tool-result'
                ? c.content.flatMap((x) => (x.kind === 'image' ? [x.attachment] : []))
                : [],
          );
        const messages = ofType(events, 'message');
        const describe = (x: (typeof expected)[number]) => ({
          sha256: x.sha256,
          mediaType: x.mediaType,
          bytes: x.bytes.length,
          width: x.width,
          height: x.height,
        });
        assert.deepEqual(attachmentsOf(messages[0]!.content), expected.slice(0, 3).map(describe));
        const toolMessage = messages.find((m) => m.role === 'tool')!;
        assert.deepEqual(attachmentsOf(toolMessage.content), [
          describe(expected[0]!),
          describe(expected[3]!),
        ]);
        // Logged once: the resent history adds no message events with images.
        assert.equal(messages.flatMap((m) => attachmentsOf(m.content)).length, 5);
        // No image bytes inside the log itself.
        assert.ok(!JSON.stringify(events).includes(png.toString('base64')));
      } finally {
        await gw.close();
      }
    });
  }
});

describe('a concurrent burst on one chat', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  /** The provider answers "answer to <last user text>", whatever order the requests arrive in. */
  function answerLastUser(format: Format) {
    return (req: RecordedRequest) => {
      const messages = (req.json?.messages ?? []) as Array<{ role: string; content: unknown }>;
      const last = messages[messages.length - 1];
      const text = typeof last?.content === 'string' ? last.content : '?';
      return {
        json:
          format === 'openai'
            ? openaiCompletion('gpt-test', `answer to ${text}`)
            : anthropicMessage('claude-test', `answer to ${text}`),
      };
    };
  }

  for (const format of formats) {
    test(`${format}: 10 requests at once with growing histories: contiguous seq, every message once`, async () => {
      const id = `burst-${format}`;
      gw.fake.script(...Array.from({ length: 10 }, () => answerLastUser(format)));
      // Request k carries u0, answer to u0, ..., uk: the history as the client knows it.
      const drivers: ChatDriver[] = Array.from({ length: 10 }, (_, k) => {
        const d = chatDriver(format, gw.url, gw.fake, modelOf(format), { headers: { 'x-session-id': id } });
        for (let j = 0; j <= k; j++) {
          d.user(`u${j}`);
          if (j < k) d.assistantText(`answer to u${j}`);
        }
        return d;
      });
      const outs = await Promise.all(drivers.map((d) => d.call()));
      outs.forEach((o, k) => {
        assert.equal(o.status, 200);
        assert.equal(o.answerText, `answer to u${k}`);
        assert.equal(o.headers.get('x-session-id'), id);
      });

      const events = await getEvents(gw.url, id);
      assertContiguous(events);
      assert.deepEqual(
        messageLines(events),
        Array.from({ length: 10 }, (_, j) => [`user: text(u${j})`, `model: text(answer to u${j})`]).flat(),
      );
      assert.equal(ofType(events, 'request').length, 10);
      assert.equal(ofType(events, 'response').length, 10);
      assert.deepEqual(
        new Set(ofType(events, 'response').map((r) => r.requestId)),
        new Set(outs.map((o) => o.headers.get('x-oda-request-id'))),
      );
      // No branch was started.
      const { body } = await getJson<{ sessions: Array<{ id: string; parent?: string }> }>(
        `${gw.url}/v1/sessions`,
      );
      assert.deepEqual(
        body.sessions.filter((s) => s.id.startsWith(id)).map((s) => s.id),
        [id],
      );
    });
  }
});
