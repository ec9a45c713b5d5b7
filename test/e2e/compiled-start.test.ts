import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FakeProvider } from '../fake-provider/fake-provider.ts';
import { testStoreIsRedis } from '../helpers/start-gateway.ts';
import { tempDir } from '../helpers/temp-dir.ts';

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

/** The exit code once the process has exited and its output pipes are drained. */
const closed = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));

/** npm as `npm test` runs it (npm's own script), else the `npm` on the PATH. */
const npmCommand = (): [string, string[]] => {
  const execPath = process.env.npm_execpath;
  return execPath && /(^|\/)npm-cli\.js$/.test(execPath) ? [process.execPath, [execPath]] : ['npm', []];
};

/** npm and everything it started run in their own process group; stop it whatever happened. */
let group: number | undefined;
const stopGroup = () => {
  if (group === undefined) return;
  try {
    process.kill(-group, 'SIGKILL');
  } catch {
    // the group has already exited
  }
  group = undefined;
};
after(stopGroup);

const skip = !existsSync('/proc/self/stat')
  ? 'reads /proc'
  : testStoreIsRedis && 'npm start runs the file store; the first pass covers it';

describe('npm start runs the compiled gateway', { skip }, () => {
  test(
    'compiles, serves its assets and a model call with node alone, and SIGTERM to npm stops it gracefully',
    { timeout: 60_000 },
    async () => {
      const fake = await new FakeProvider().start();
      const dir = tempDir('oda-compiled-');
      const startedAt = Date.now();
      const [command, prefix] = npmCommand();
      const npm = spawn(command, [...prefix, 'start', '--silent'], {
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
      group = npm.pid;
      const exited = closed(npm).then((code) => {
        group = undefined; // it has exited: its process group id may be reused
        return code;
      });
      let out = '';
      let stdout = '';
      const url = new Promise<string>((resolve, reject) => {
        npm.on('error', (err) => reject(new Error(`could not run npm: ${err.message}`)));
        npm.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          stdout += d.toString();
          const m = /listening on (http:\/\/[0-9.:]+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        npm.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        npm.on('exit', () => reject(new Error(`npm start exited before listening: ${out}`)));
      });
      url.catch(() => {});
      try {
        const base = await url;
        const compiled = join(root, '.build/server/main.mjs');
        assert.ok(statSync(compiled).mtimeMs >= startedAt - 1000, 'prestart compiled the gateway again');

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
          body: JSON.stringify({
            model: 'gpt-test',
            messages: [{ role: 'user', content: 'hello compiled' }],
          }),
        });
        assert.equal(res.status, 200);
        const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
        assert.equal(typeof body.choices[0]!.message.content, 'string');
        assert.equal(fake.requests.length, 1);
        const sessions = (await (await fetch(`${base}/v1/sessions?limit=5`)).json()) as { data: unknown[] };
        assert.equal(sessions.data.length, 1, 'the call was logged as a chat');

        npm.kill('SIGTERM');
        assert.equal(await exited, 0);
        assert.match(out, /"msg":"shutting down"/);
        assert.match(out, /"msg":"stopped"/);
        // stdout carries the gateway's log lines and nothing else (the build speaks on stderr), so a
        // log shipper reading it sees JSON only.
        for (const line of stdout.split('\n').filter((l) => l !== '')) {
          assert.doesNotThrow(() => JSON.parse(line), `not a JSON log line on stdout: ${line}`);
        }
      } finally {
        stopGroup();
        await fake.close();
      }
    },
  );
});
