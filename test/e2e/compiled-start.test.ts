import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeProvider } from '../fake-provider/fake-provider.ts';

const root = new URL('../..', import.meta.url).pathname;

/** The command line of every process whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): string[] {
  const out: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim());
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}

const exitCode = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.on('exit', (code) => resolve(code));
  });

describe('npm start runs the compiled gateway', { skip: !existsSync('/proc/self/stat') }, () => {
  test('compiles, serves its assets and a model call with node alone, and SIGTERM to npm stops it gracefully', async () => {
    const fake = await new FakeProvider().start();
    const dir = mkdtempSync(join(tmpdir(), 'oda-compiled-'));
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? dir,
        PORT: '0',
        ODA_DATA_DIR: join(dir, 'data'),
        OPENAI_BASE_URL: `${fake.url}/v1`,
        ANTHROPIC_BASE_URL: fake.url,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so a failed test can stop npm and whatever it started
    });
    let out = '';
    const url = new Promise<string>((resolve, reject) => {
      npm.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening on (http:\/\/[0-9.:]+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      npm.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      npm.on('exit', () => reject(new Error(`npm start exited before listening: ${out}`)));
    });
    url.catch(() => {});
    try {
      const base = await url;
      assert.ok(existsSync(join(root, '.build/server/main.mjs')), 'prestart wrote the compiled gateway');

      // The gateway is npm's own child, run by node from the compiled file: no TypeScript loader,
      // no shell in between (a shell would not pass npm's SIGTERM on).
      const children = childrenOf(npm.pid!);
      assert.equal(children.length, 1, `npm's children: ${JSON.stringify(children)}`);
      assert.match(children[0]!, /^\S*node \.build\/server\/main\.mjs$/);

      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      const spec = await fetch(`${base}/openapi.yaml`);
      assert.equal(spec.status, 200);
      assert.match(await spec.text(), /^openapi: 3/m);
      const page = await fetch(`${base}/ui/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);

      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hello compiled' }] }),
      });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      assert.equal(typeof body.choices[0]!.message.content, 'string');
      assert.equal(fake.requests.length, 1);
      const sessions = (await (await fetch(`${base}/v1/sessions?limit=5`)).json()) as { data: unknown[] };
      assert.equal(sessions.data.length, 1, 'the call was logged as a chat');

      npm.kill('SIGTERM');
      assert.equal(await exitCode(npm), 0);
      assert.match(out, /"msg":"shutting down"/);
      assert.match(out, /"msg":"stopped"/);
    } finally {
      try {
        process.kill(-npm.pid!, 'SIGKILL');
      } catch {
        // the group has already exited
      }
      await fake.close();
    }
  });
});
