import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { tempDir } from '../helpers/temp-dir.ts';

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
});
