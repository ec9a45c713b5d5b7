#!/usr/bin/env node
// Runs every *.test.ts in the repo with node's test runner (through tsx). It looks in every folder
// but node_modules, hidden ones and the default data directory, so a test in a new folder is never
// left out.
// When no REDIS_URL is given and `redis-server` is installed, a private Redis is started on a free
// port for the run and stopped afterwards, so the Redis-store tests never touch a shared server.
import { spawn } from 'node:child_process';
import { readdirSync, statSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';

const root = new URL('..', import.meta.url).pathname;
const only = process.argv.slice(2);

function walk(dir, out) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name.startsWith('.') || (dir === root && name === 'data')) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function which(cmd) {
  return new Promise((resolve) => {
    const p = spawn('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    p.on('exit', (code) => resolve(code === 0));
  });
}

async function startRedis() {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {} };
  if (!(await which('redis-server'))) return { url: undefined, stop: () => {} };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'oda-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  // Wait until it accepts connections.
  const { connect } = await import('node:net');
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.on('connect', () => (c.end(), resolve(true)));
      c.on('error', () => resolve(false));
    });
    if (ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => {
      child.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const files = walk(root, []).filter((f) => only.length === 0 || only.some((o) => f.includes(o)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const redis = await startRedis();
const env = { ...process.env };
if (redis.url) env.REDIS_URL = redis.url;
else console.warn('redis-server not found and REDIS_URL unset: Redis-store tests will be skipped');
function run(testFiles, extraEnv) {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...testFiles], {
    stdio: 'inherit',
    env: { ...env, ...extraEnv },
    cwd: root,
  });
  return new Promise((resolve) => child.on('exit', (c, sig) => resolve(c ?? (sig ? 1 : 0))));
}

let code = await run(files, {});
// The end-to-end suite once more with the chat log in Redis (test/helpers/start-gateway.ts reads
// ODA_TEST_STORE), so both stores pass the same behaviour tests.
const e2e = files.filter((f) => f.startsWith(join('test', 'e2e') + '/'));
if (redis.url && e2e.length > 0) {
  console.log(`\n# end-to-end suite again with the Redis store (${e2e.length} files)`);
  const again = await run(e2e, { ODA_TEST_STORE: 'redis' });
  code = code || again;
}
redis.stop();
process.exit(code);
