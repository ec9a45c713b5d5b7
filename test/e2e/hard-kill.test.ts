/**
 * An acknowledged turn survives a hard kill (SPEC sections 6 and 13): a real gateway process
 * (`server/main.ts`, the file store with its defaults) answers turns through the official SDKs,
 * streamed and not, and is killed with SIGKILL the moment the last answer has reached the client
 * (no shutdown, no flush). A new process on the same data dir holds every answered turn: the
 * messages sent, the answers, and a response event for each request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { testStoreIsRedis } from '../helpers/start-gateway.ts';
import type { Event } from '../../chat-log/format/current.ts';
import { freePort } from '../helpers/free-port.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Gateway {
  url: string;
  child: ChildProcess;
}

/** `server/main.ts` on `dataDir` in front of `fake`; resolves once /readyz answers 200. */
async function startMain(dataDir: string, fake: FakeProvider): Promise<Gateway> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      ODA_DATA_DIR: dataDir,
      OPENAI_BASE_URL: `${fake.url}/v1`,
      ANTHROPIC_BASE_URL: fake.url,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (c: Buffer) => (errors += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited: ${errors}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return { url, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`the gateway never became ready: ${errors}`);
}

function hardKill(g: Gateway): Promise<void> {
  return new Promise((resolve) => {
    if (g.child.exitCode !== null || g.child.signalCode !== null) return resolve();
    g.child.once('exit', () => resolve());
    g.child.kill('SIGKILL');
  });
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

const ANSWER = 'Hello from the fake provider.';

describe('an acknowledged turn survives a hard kill', { skip: testStoreIsRedis && 'the file store' }, () => {
  let dir: string;
  let fake: FakeProvider;
  let running: Gateway | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oda-hard-kill-'));
    fake = await new FakeProvider().start();
  });
  after(async () => {
    if (running) await hardKill(running);
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('turns answered through both SDKs, streamed and not, are in the log after SIGKILL', async () => {
    const dataDir = join(dir, 'data');
    running = await startMain(dataDir, fake);
    const openai = new OpenAI({
      baseURL: `${running.url}/v1`,
      apiKey: 'sk-client',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': 'killed-openai' },
    });
    const anthropic = new Anthropic({
      baseURL: running.url,
      apiKey: 'sk-ant-client',
      maxRetries: 0,
      defaultHeaders: { 'x-session-id': 'killed-anthropic' },
    });

    // OpenAI: a whole answer, then a streamed one continuing the chat.
    const first = await openai.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'first question' }],
    });
    assert.equal(first.choices[0]!.message.content, ANSWER);
    const stream = await openai.chat.completions.create({
      model: 'gpt-test',
      stream: true,
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: ANSWER },
        { role: 'user', content: 'second question' },
      ],
    });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(streamed, ANSWER);

    // Anthropic: a streamed answer last, and the kill right after its last byte arrived.
    const message = await anthropic.messages.create({
      model: 'claude-test',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'third question' }],
    });
    assert.equal(message.content[0]?.type === 'text' ? message.content[0].text : '', ANSWER);
    const last = anthropic.messages.stream({
      model: 'claude-test',
      max_tokens: 64,
      messages: [
        { role: 'user', content: 'third question' },
        { role: 'assistant', content: ANSWER },
        { role: 'user', content: 'fourth question' },
      ],
    });
    assert.equal(await last.finalText(), ANSWER);
    await hardKill(running);

    running = await startMain(dataDir, fake);
    const o = await events(running.url, 'killed-openai');
    assert.deepEqual(
      o.filter((e) => e.type === 'message').map((e) => `${(e as { role: string }).role}: ${textOf(e)}`),
      ['user: first question', `model: ${ANSWER}`, 'user: second question', `model: ${ANSWER}`],
    );
    const a = await events(running.url, 'killed-anthropic');
    assert.deepEqual(
      a.filter((e) => e.type === 'message').map((e) => `${(e as { role: string }).role}: ${textOf(e)}`),
      ['user: third question', `model: ${ANSWER}`, 'user: fourth question', `model: ${ANSWER}`],
    );
    for (const log of [o, a]) {
      const requests = log.filter((e) => e.type === 'request');
      const responses = log.filter((e): e is Extract<Event, { type: 'response' }> => e.type === 'response');
      assert.equal(requests.length, 2);
      assert.equal(responses.length, 2);
      assert.ok(responses.every((r) => r.ok && r.status === 200));
      assert.deepEqual(
        log.map((e) => e.seq),
        log.map((_, i) => i),
      );
    }
  });
});
