import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { bodies, openaiCompletion, openaiStream } from '../fake-provider/fake-bodies.ts';
import { RawConnection } from '../helpers/raw-http.ts';
import { Redis } from 'ioredis';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../helpers/redis-test.ts';
import { privateRedis, redisServerInstalled } from '../helpers/private-redis.ts';
import { testStoreIsRedis } from '../helpers/start-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { FileLogBackend } from '../../chat-log/store-file.ts';
import { RedisLogBackend } from '../../chat-log/store-redis.ts';

const root = new URL('../..', import.meta.url).pathname;

function startMain(
  env: Record<string, string>,
  args: string[] = [],
): { child: ChildProcess; out: () => string; url: Promise<string> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[0-9.:]+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', () => reject(new Error(`exited before listening: ${out}`)));
  });
  url.catch(() => {});
  return { child, out: () => out, url };
}

const exitCode = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.on('exit', (code) => resolve(code));
  });

/** Resolves once `check` holds, looking again every 20 ms. */
/**
 * Starts the gateway with a config file in a temp dir: a data dir there, the fake provider at
 * `fakeUrl` as its OpenAI provider, and `extra` (server settings, a store).
 */
function startWithConfig(fakeUrl: string, extra: Record<string, unknown>) {
  const dir = tempDir('oda-proc-');
  const dataDir = join(dir, 'data');
  const cfg = join(dir, 'oda.json');
  writeFileSync(
    cfg,
    JSON.stringify({
      ...extra,
      dataDir,
      providers: [{ name: 'fake', format: 'openai', baseUrl: `${fakeUrl}/v1` }],
    }),
  );
  return { ...startMain({ ODA_CONFIG: cfg }), dataDir };
}

async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20));
}

/** A promise and the function that settles it: a call the test keeps in flight. */
function held(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

/** A chat call as a keep-alive client writes it on its connection. */
/** The JSON lines of a gateway's output. */
function logLines(text: string): Array<{ level: number; msg: string; cutBy?: string; complete?: boolean }> {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; cutBy?: string; complete?: boolean });
}

/**
 * Runs `body` with a gateway process (grace period `graceMs`) whose one stream is held by the
 * provider after its first event has reached the client; cleans up after.
 */
async function withHeldStream(
  graceMs: number,
  body: (run: { child: ChildProcess; out: () => string; streaming: RawConnection }) => Promise<void>,
): Promise<void> {
  const fake = await new FakeProvider().start();
  const stream = held();
  fake.script({
    sse: openaiStream('gpt-test', ['s1 ', 's2 ']),
    holdAfter: { events: 2, until: stream.until },
  });
  const { child, out, url } = startWithConfig(fake.url, { server: { port: 0, shutdownGraceMs: graceMs } });
  try {
    const streaming = await RawConnection.open(await url);
    streaming.write(chatRequest(await url, { stream: true, messages: [{ role: 'user', content: 'held' }] }));
    await streaming.until((text) => text.includes('s1 '));
    await body({ child, out, streaming });
  } finally {
    stream.release();
    if (child.exitCode === null) child.kill('SIGKILL');
    await fake.close();
  }
}

function chatRequest(
  base: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): string {
  const text = JSON.stringify({ model: 'gpt-test', ...body });
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${new URL(base).host}\r\nContent-Type: application/json\r\n` +
    `${extra}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
  );
}

describe('the gateway process run from source (server/main.ts under tsx)', () => {
  test('a bad config stops start-up with a message naming the key', async () => {
    const dir = tempDir('oda-proc-');
    const cfg = join(dir, 'oda.yaml');
    writeFileSync(cfg, 'toolResultTrimming:\n  thresholdChars: 10\n  maxChars: 3\n');
    const { child, out } = startMain({ ODA_CONFIG: cfg, ODA_DATA_DIR: join(dir, 'data') });
    assert.equal(await exitCode(child), 1);
    assert.match(
      out(),
      /toolResultTrimming: unknown key\(s\) "maxChars"; allowed keys are thresholdChars, headChars, tailChars/,
    );
  });

  test('--config without a file, or a PORT that is no port, stops start-up naming it', async () => {
    const dir = tempDir('oda-proc-');
    for (const [env, args, message] of [
      [{}, ['--config'], /--config: expected the path of a config file after it/],
      [{ PORT: ' ' }, [], /PORT: expected a port number from 0 to 65535, got " "/],
    ] as const) {
      const started = startMain({ ODA_DATA_DIR: join(dir, 'data'), ...env }, [...args]);
      // A gateway that starts anyway is stopped, so the test fails instead of waiting on it.
      if (
        (await started.url.then(
          () => 'listening',
          () => 'exited',
        )) === 'listening'
      )
        started.child.kill();
      assert.equal(await exitCode(started.child), 1, started.out());
      assert.match(started.out(), message);
    }
  });

  test('serves with zero config from the environment, and SIGTERM lets a stream finish then exits 0', async () => {
    const fake = await new FakeProvider({
      chunkDelayMs: 40,
      streamPieces: Array.from({ length: 20 }, (_, i) => `c${i} `),
    }).start();
    const dir = tempDir('oda-proc-');
    const { child, url } = startMain({
      PORT: '0',
      ODA_DATA_DIR: join(dir, 'data'),
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ANTHROPIC_BASE_URL: fake.url,
    });
    try {
      const base = await url;
      const health = await fetch(`${base}/healthz`);
      assert.equal(health.status, 200);
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'gpt-test',
          messages: [{ role: 'user', content: 'long stream' }],
          stream: true,
        }),
      });
      const reader = res.body!.getReader();
      await reader.read();
      child.kill('SIGTERM');
      let text = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString();
      }
      assert.ok(text.includes('c19 '), 'the in-flight stream finished');
      assert.ok(text.endsWith('data: [DONE]\n\n'));
      assert.equal(await exitCode(child), 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await fake.close();
    }
  });

  test(
    'SIGTERM drains keep-alive connections: answers in flight finish and close theirs, a new request on one is a 503',
    { timeout: 60_000 },
    async () => {
      const fake = await new FakeProvider().start();
      const whole = held();
      const stream = held();
      fake.script(
        { json: openaiCompletion('gpt-test', 'the whole answer'), after: whole.until },
        {
          sse: openaiStream('gpt-test', ['s1 ', 's2 ', 's3 ']),
          holdAfter: { events: 2, until: stream.until },
        },
      );
      // Everything here must end without the grace period cutting it: a connection left open is
      // cut when it ends, which the log says.
      const { child, out, url } = startWithConfig(fake.url, { server: { port: 0, shutdownGraceMs: 20_000 } });
      try {
        const base = await url;
        // A request whose headers are still coming when the gateway starts draining.
        const late = await RawConnection.open(base);
        late.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: ${new URL(base).host}\r\n`);
        // A whole answer the provider has not sent yet, and a stream whose headers went out.
        const waiting = await RawConnection.open(base);
        waiting.write(chatRequest(base, { messages: [{ role: 'user', content: 'whole' }] }));
        await eventually(() => fake.requests.length === 1);
        const streaming = await RawConnection.open(base);
        streaming.write(chatRequest(base, { stream: true, messages: [{ role: 'user', content: 'stream' }] }));
        await streaming.until((text) => text.includes('s1 '));

        child.kill('SIGTERM');
        await eventually(() => out().includes('shutting down'));

        const body = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'late' }] });
        late.write(
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        const refused = await late.response();
        assert.equal(refused?.status, 503, 'a request arriving on an old connection while draining');
        assert.equal(refused.headers.connection, 'close');
        assert.ok(refused.headers['retry-after'], 'the 503 says when to retry');
        const error = (JSON.parse(refused.body) as { error: { code: string; type: string } }).error;
        assert.equal(error.code, 'ODA_ERR_SHUTTING_DOWN');
        await late.closed;
        assert.equal(fake.requests.length, 2, 'the refused request never went to the provider');

        whole.release();
        const answer = await waiting.response();
        assert.equal(answer?.status, 200, 'the call in flight is answered');
        assert.match(answer.body, /the whole answer/);
        assert.equal(answer.headers.connection, 'close', 'its answer says the connection closes');
        await waiting.closed;

        stream.release();
        const streamed = await streaming.response();
        assert.equal(streamed?.status, 200);
        assert.ok(streamed.body.endsWith('data: [DONE]\n\n'), 'the stream in flight finished');
        // Its headers promised keep-alive, but the gateway closes it once the stream is out: the
        // client's next request on it finds it closed (and goes to a new connection).
        streaming.write(chatRequest(base, { messages: [{ role: 'user', content: 'next' }] }));
        const next = await streaming.response();
        assert.equal(next, undefined, `the next request on the stream's connection got a ${next?.status}`);
        await streaming.closed;

        assert.equal(await exitCode(child), 0);
        assert.equal(fake.requests.length, 2);
        assert.doesNotMatch(out(), /grace period over/, 'every connection closed on its own');
        assert.equal(out().match(/"msg":"model call done"/g)?.length, 2, out());
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
        await fake.close();
      }
    },
  );

  test(
    'a second signal ends the grace period at once: the held stream is cut, the log flushed, exit 0',
    { timeout: 60_000 },
    // A grace period far longer than the test: only the second signal can end it.
    () =>
      withHeldStream(600_000, async ({ child, out, streaming }) => {
        child.kill('SIGINT');
        await eventually(() => out().includes('shutting down'));
        child.kill('SIGINT');
        await streaming.closed;
        assert.equal(await exitCode(child), 0);
        const messages = logLines(out()).map((l) => l.msg);
        assert.ok(messages.includes('second signal: closing remaining connections now'), out());
        assert.ok(messages.includes('model call cut short'), out());
        assert.equal(messages.at(-1), 'stopped');
      }),
  );

  test('a stream the grace period cuts is logged as cut short by the shutdown', { timeout: 60_000 }, () =>
    withHeldStream(500, async ({ child, out, streaming }) => {
      child.kill('SIGTERM');
      await streaming.closed;
      assert.equal(await exitCode(child), 0);
      const lines = logLines(out());
      assert.ok(lines.some((l) => l.msg === 'grace period over; closing remaining connections'));
      const call = lines.find((l) => l.msg.startsWith('model call'));
      assert.equal(call?.msg, 'model call cut short', out());
      assert.equal(call.cutBy, 'shutdown');
      assert.equal(call.complete, false);
      assert.equal(call.level, 40, 'warn');
    }),
  );
  for (const store of ['file', 'redis'] as const)
    test(
      `the calls the grace period cuts are in the chat log before the process exits (${store} store)`,
      { timeout: 60_000, skip: store === 'redis' ? redisSkip : false },
      async () => {
        const fake = await new FakeProvider().start();
        const stream = held();
        const whole = held();
        fake.script(
          { sse: openaiStream('gpt-test', ['s1 ', 's2 ']), holdAfter: { events: 2, until: stream.until } },
          { json: openaiCompletion('gpt-test', 'too late'), after: whole.until },
          // Transient, asking for a wait the gateway honours: the call sits in its retry backoff.
          { status: 503, json: bodies.openaiServerError(), headers: { 'retry-after-ms': '3000' } },
        );
        const prefix = uniquePrefix('proc-cut');
        const { child, out, url, dataDir } = startWithConfig(fake.url, {
          server: { port: 0, shutdownGraceMs: 500 },
          ...(store === 'redis' ? { store: { kind: 'redis', url: redisUrl, prefix } } : {}),
        });
        const chats = ['cut-stream', 'cut-waiting', 'cut-backoff'];
        try {
          const base = await url;
          const call = async (chat: string, body: Record<string, unknown>) => {
            const conn = await RawConnection.open(base);
            conn.write(chatRequest(base, body, { 'x-session-id': chat }));
            return conn;
          };
          // A stream whose first words went out, a call the provider has not answered yet, and a
          // call waiting to retry: none of them can end before the grace period does.
          const streaming = await call(chats[0]!, {
            stream: true,
            messages: [{ role: 'user', content: 'a' }],
          });
          await streaming.until((text) => text.includes('s1 '));
          await call(chats[1]!, { messages: [{ role: 'user', content: 'b' }] });
          await eventually(() => fake.requests.length === 2);
          await call(chats[2]!, { messages: [{ role: 'user', content: 'c' }] });
          await eventually(() => out().includes('retrying upstream call'));

          child.kill('SIGTERM');
          assert.equal(await exitCode(child), 0);
          const messages = logLines(out()).map((l) => l.msg);
          const stopped = messages.indexOf('stopped');
          assert.ok(stopped > 0, out());
          assert.equal(
            messages.slice(0, stopped).filter((m) => m === 'model call cut short').length,
            3,
            `every cut call closed before the process stopped: ${out()}`,
          );
          assert.doesNotMatch(out(), /could not append the response to the chat log/);

          // What the process left in its store: each cut call's failed response.
          const backend =
            store === 'redis'
              ? new RedisLogBackend({ url: redisUrl!, prefix })
              : new FileLogBackend({ dataDir });
          try {
            for (const chat of chats) {
              const responses = (await backend.read(chat, 0)).filter((e) => e.type === 'response');
              assert.equal(responses.length, 1, `the response of ${chat} is logged`);
              assert.equal(responses[0]!.ok, false, chat);
            }
          } finally {
            await backend.close();
          }
        } finally {
          stream.release();
          whole.release();
          if (child.exitCode === null) child.kill('SIGKILL');
          await fake.close();
          if (store === 'redis') await dropPrefix(prefix);
        }
      },
    );

  test(
    'a chat being created when the grace period ends is in the store before the process exits',
    {
      timeout: 60_000,
      skip: (!redisServerInstalled && 'redis-server is not installed') || (testStoreIsRedis && 'runs once'),
    },
    async () => {
      // A private Redis whose writes the test holds back (CLIENT PAUSE WRITE): the creation waits
      // in the store, past the grace period, as on a store slow to answer.
      const redis = await privateRedis();
      const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      const fake = await new FakeProvider().start();
      const { child, out, url } = startWithConfig(fake.url, {
        server: { port: 0, shutdownGraceMs: 200 },
        store: { kind: 'redis', url: redis.url, prefix: 'proc-create:' },
      });
      try {
        const base = await url;
        await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
        const creating = await RawConnection.open(base);
        const body = JSON.stringify({ id: 'made-at-shutdown', cwd: '/projects/demo' });
        creating.write(
          `POST /v1/sessions HTTP/1.1\r\nHost: ${new URL(base).host}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
        // The creation's script has reached Redis and waits there.
        const waiting = async () =>
          String(await admin.call('CLIENT', 'LIST'))
            .split('\n')
            .some((c) => / flags=b /.test(c) && / cmd=eval /.test(c));
        while (!(await waiting())) await new Promise((r) => setTimeout(r, 20));

        child.kill('SIGTERM');
        await creating.closed;
        assert.equal(await exitCode(child), 0);
        const lines = logLines(out());
        const messages = lines.map((l) => l.msg);
        assert.ok(messages.includes('grace period over; closing remaining connections'), out());
        // The shutdown waited for the creation, as for a model call, before it closed the chat log.
        const waited = messages.indexOf('calls cut short have written to the chat log');
        assert.ok(waited >= 0 && waited < messages.indexOf('stopped'), out());
        assert.ok(!lines.some((l) => l.level >= 50), `no error: ${out()}`);

        // What the process left in its store: the chat, with the header the client sent.
        const backend = new RedisLogBackend({ url: redis.url, prefix: 'proc-create:' });
        try {
          assert.equal((await backend.header('made-at-shutdown'))?.cwd, '/projects/demo');
        } finally {
          await backend.close();
        }
      } finally {
        admin.disconnect();
        if (child.exitCode === null) child.kill('SIGKILL');
        await fake.close();
        await redis.stop();
      }
    },
  );

  test('a second gateway on the same dataDir is refused without touching it; a port in use leaves the dataDir alone; a hard-killed claim is taken over', async () => {
    const dir = tempDir('oda-proc-claim-');
    const dataDir = join(dir, 'data');
    const env = { PORT: '0', ODA_DATA_DIR: dataDir, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' };
    const first = startMain(env);
    const others: ChildProcess[] = [first.child];
    try {
      const base = await first.url;
      const second = startMain(env);
      others.push(second.child);
      // A second gateway that starts anyway is stopped, so the test fails instead of waiting on it.
      if (
        (await second.url.then(
          () => 'listening',
          () => 'exited',
        )) === 'listening'
      )
        second.child.kill();
      assert.equal(await exitCode(second.child), 1, second.out());
      assert.match(
        second.out(),
        new RegExp(`dataDir ${dataDir} is in use by another gateway \\(pid ${first.child.pid} on host `),
      );
      assert.doesNotMatch(second.out(), /chat index/, 'the refused gateway never opened the index');
      assert.equal((await fetch(`${base}/healthz`)).status, 200);

      // Its port taken: the start fails before the dataDir's index is opened, and leaves no claim.
      const otherDir = join(dir, 'other');
      const busy = startMain({ ...env, ODA_DATA_DIR: otherDir, PORT: new URL(base).port });
      others.push(busy.child);
      if (
        (await busy.url.then(
          () => 'listening',
          () => 'exited',
        )) === 'listening'
      )
        busy.child.kill();
      assert.equal(await exitCode(busy.child), 1, busy.out());
      assert.match(busy.out(), /cannot listen/);
      assert.doesNotMatch(busy.out(), /chat index/);
      assert.deepEqual(existsSync(otherDir) ? readdirSync(otherDir) : [], []);

      // A gateway killed hard leaves its claim; the next start takes it over and says so.
      first.child.kill('SIGKILL');
      await exitCode(first.child);
      const next = startMain(env);
      others.push(next.child);
      await next.url;
      assert.match(next.out(), /taking over the claim on dataDir .* of a gateway no longer running/);
      next.child.kill('SIGTERM');
      assert.equal(await exitCode(next.child), 0);
      assert.equal(existsSync(join(dataDir, 'gateway.lock')), false, 'a clean stop releases the claim');
    } finally {
      for (const c of others) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    }
  });
});
