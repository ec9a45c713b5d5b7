/**
 * Several replicas on one Redis (SPEC section 8): two real gateway processes (`server/main.ts`
 * through tsx, each with its own config file and its own dataDir, one shared attachmentsDir) behind
 * the same fake provider. One chat's turns go to both, alternately and concurrently, through the
 * official OpenAI SDK: there is one log with contiguous sequence numbers, nothing lost or doubled,
 * and a decision one replica makes (an image set aside after an image-limit refusal) is applied by
 * the other on the next turn.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { FakeProvider, countImages } from '../fake-provider/fake-provider.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../helpers/redis-test.ts';
import { testStoreIsRedis } from '../helpers/start-gateway.ts';
import { makePng } from '../../chat-log/test-images.ts';
import type { Event } from '../../chat-log/format/current.ts';
import { freePort } from '../helpers/free-port.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Replica {
  url: string;
  child: ChildProcess;
  output: () => string;
}

/** Starts `server/main.ts` with `config` written to a file; resolves once /readyz answers 200. */
async function startReplica(dir: string, name: string, config: Record<string, unknown>): Promise<Replica> {
  const configPath = join(dir, `${name}.json`);
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts', '--config', configPath], {
    cwd: root,
    env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), ODA_CONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`replica ${name} exited: ${output}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return { url, child, output: () => output };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`replica ${name} never became ready: ${output}`);
}

async function stopReplica(r: Replica | undefined): Promise<void> {
  if (!r || r.child.exitCode !== null) return;
  const exited = new Promise((resolve) => r.child.once('exit', resolve));
  r.child.kill('SIGTERM');
  const timer = setTimeout(() => r.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

async function events(url: string, id: string): Promise<Event[]> {
  const res = await fetch(`${url}/v1/sessions/${id}/events`);
  assert.equal(res.status, 200, `events of ${id}`);
  return ((await res.json()) as { events: Event[] }).events;
}

const textOf = (e: Event): string | undefined =>
  e.type === 'message'
    ? e.content.map((p) => (p.kind === 'text' ? p.text : `[${p.kind}]`)).join('')
    : undefined;

function assertContiguous(log: readonly Event[]): void {
  assert.deepEqual(
    log.map((e) => e.seq),
    log.map((_, i) => i),
    'one log, contiguous seq from 0',
  );
}

type Msg = OpenAI.ChatCompletionMessageParam;

describe(
  'two gateway replicas on one Redis',
  { skip: redisSkip || (testStoreIsRedis && 'runs once, in the file-store pass') },
  () => {
    const prefix = uniquePrefix('replicas');
    let dir: string;
    let fake: FakeProvider;
    let a: Replica | undefined;
    let b: Replica | undefined;
    const client = (r: Replica | undefined, chat: string) =>
      new OpenAI({
        baseURL: `${r!.url}/v1`,
        apiKey: 'sk-client',
        maxRetries: 0,
        defaultHeaders: { 'x-session-id': chat },
      });

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'oda-replicas-'));
      fake = await new FakeProvider().start();
      const config = (name: string) => ({
        dataDir: join(dir, `data-${name}`),
        attachmentsDir: join(dir, 'shared-attachments'),
        store: { kind: 'redis', url: redisUrl, prefix },
        providers: [{ name: 'fake-openai', format: 'openai', baseUrl: `${fake.url}/v1` }],
        retries: { maxRetries: 0 },
        logLevel: 'warn',
      });
      [a, b] = await Promise.all([startReplica(dir, 'a', config('a')), startReplica(dir, 'b', config('b'))]);
    });
    after(async () => {
      await Promise.all([stopReplica(a), stopReplica(b)]);
      await fake?.close();
      await dropPrefix(prefix);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('turns sent alternately to both replicas make one log, nothing lost or doubled', async () => {
      const chat = 'alternating';
      const history: Msg[] = [];
      for (let turn = 0; turn < 8; turn++) {
        history.push({ role: 'user', content: `turn ${turn}` });
        const { data, response } = await client(turn % 2 ? b : a, chat)
          .chat.completions.create({ model: 'gpt-test', messages: history })
          .withResponse();
        assert.equal(response.headers.get('x-session-id'), chat, 'no branch: both replicas saw the same log');
        history.push({ role: 'assistant', content: data.choices[0]!.message.content ?? '' });
      }
      const fromA = await events(a!.url, chat);
      assert.deepEqual(await events(b!.url, chat), fromA, 'both replicas read the same log');
      assertContiguous(fromA);
      assert.deepEqual(
        fromA.filter((e) => e.type === 'message').map(textOf),
        history.map((m) => m.content),
        'every message once, in order',
      );
      assert.equal(fromA.filter((e) => e.type === 'request').length, 8);
      assert.equal(fromA.filter((e) => e.type === 'response').length, 8);
    });

    test('concurrent turns of one chat on both replicas are serialised: one log, each request and answer once', async () => {
      const chat = 'concurrent';
      const K = 12;
      // Concurrent means all under way before the first answer: a request that starts after an
      // answer to its history was logged asks for another answer, which goes to a branch.
      fake.reset();
      fake.options.holdUntilRequests = K;
      let results;
      try {
        results = await Promise.all(
          Array.from({ length: K }, (_, i) =>
            client(i % 2 ? b : a, chat)
              .chat.completions.create({
                model: 'gpt-test',
                messages: [{ role: 'user', content: 'the same question' }],
              })
              .withResponse(),
          ),
        );
      } finally {
        delete fake.options.holdUntilRequests;
      }
      for (const r of results) assert.equal(r.response.headers.get('x-session-id'), chat);
      const log = await events(b!.url, chat);
      assertContiguous(log);
      const users = log.filter((e) => e.type === 'message' && e.role === 'user');
      assert.deepEqual(users.map(textOf), ['the same question'], 'the question is logged once');
      const requests = log.filter((e): e is Extract<Event, { type: 'request' }> => e.type === 'request');
      const responses = log.filter((e): e is Extract<Event, { type: 'response' }> => e.type === 'response');
      assert.equal(requests.length, K);
      assert.equal(new Set(requests.map((e) => e.requestId)).size, K, 'no request logged twice');
      assert.deepEqual(
        responses.map((e) => e.requestId).sort(),
        requests.map((e) => e.requestId).sort(),
        'every request has exactly one response',
      );
      for (const r of responses) {
        const req = requests.find((q) => q.requestId === r.requestId)!;
        assert.ok(req.seq < r.seq, 'a response follows its request');
      }
      assert.equal(fake.requestsTo('/v1/chat/completions').length >= K, true);
    });

    test('an image set aside by one replica is set aside by the other on the next turn', async () => {
      fake.options.imageLimit = 1;
      try {
        const chat = 'images';
        const first = makePng(4, 3, 1).toString('base64');
        const second = makePng(5, 2, 2).toString('base64');
        const history: Msg[] = [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'two pictures' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${first}` } },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${second}` } },
            ],
          },
        ];
        fake.reset();
        const one = await client(a, chat)
          .chat.completions.create({ model: 'gpt-test', messages: history })
          .withResponse();
        assert.equal(one.response.headers.get('x-oda-images-set-aside'), '1');
        const round = fake.requestsTo('/v1/chat/completions');
        assert.equal(round.length, 2, 'refused with two images, accepted with one');
        assert.equal(countImages(round[1]!.json!).length, 1);

        history.push({ role: 'assistant', content: one.data.choices[0]!.message.content ?? '' });
        history.push({ role: 'user', content: 'and now?' });
        fake.reset();
        const two = await client(b, chat)
          .chat.completions.create({ model: 'gpt-test', messages: history })
          .withResponse();
        assert.equal(two.response.headers.get('x-session-id'), chat);
        const sent = fake.requestsTo('/v1/chat/completions');
        assert.equal(sent.length, 1, 'replica b replayed the decision: no refusal round');
        assert.equal(countImages(sent[0]!.json!).length, 1);
        const raw = sent[0]!.raw.toString('utf8');
        assert.ok(!raw.includes(first), 'the image set aside is not sent');
        assert.ok(raw.includes(second));
        const note = /Read-only copy: ([^\]"]+)/.exec(raw)?.[1];
        assert.ok(
          note?.startsWith(join(dir, 'shared-attachments')),
          `the note points into the shared attachmentsDir: ${note}`,
        );
        assert.ok(existsSync(note!), 'and the copy is there');

        const log = await events(a!.url, chat);
        assertContiguous(log);
        assert.equal(log.filter((e) => e.type === 'image-set-aside').length, 1, 'decided once');
      } finally {
        fake.options.imageLimit = undefined;
      }
    });

    test('both replicas stayed up and quiet', () => {
      for (const r of [a!, b!]) {
        assert.equal(r.child.exitCode, null);
        assert.ok(!/"level":(50|60)/.test(r.output()), r.output());
      }
    });
  },
);
