#!/usr/bin/env node
// Runs every *.test.ts in the repo (scripts/test-files.mjs finds them) with node's test runner
// (through tsx).
// When no REDIS_URL is given and `redis-server` is installed, a private Redis is started on a free
// port for the run and stopped afterwards, so the Redis-store tests never touch a shared server.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { failedTests, testFiles } from './test-files.mjs';

const root = new URL('..', import.meta.url).pathname;
const only = process.argv.slice(2);

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

const files = testFiles(root).filter((f) => only.length === 0 || only.some((o) => f.includes(o)));
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const redis = await startRedis();
const env = { ...process.env };
if (redis.url) env.REDIS_URL = redis.url;
else console.warn('redis-server not found and REDIS_URL unset: Redis-store tests will be skipped');
// Each pass also writes a TAP copy of its report to a temp file, read at the end for a list of what
// failed: a CI log that keeps only its tail still names every failed test of both passes.
const reports = mkdtempSync(join(tmpdir(), 'oda-test-report-'));
// Stopped before the end (Ctrl-C, a CI timeout): the test process, the private Redis and the reports
// go with the runner instead of running on.
let current;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    current?.kill(signal);
    redis.stop();
    rmSync(reports, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}
function run(list, extraEnv, name) {
  const tap = join(reports, `${name}.tap`);
  const reporter = process.stdout.isTTY ? 'spec' : 'tap'; // node's own default for stdout
  const args = ['--import', 'tsx', '--test', '--test-concurrency=2'];
  args.push(`--test-reporter=${reporter}`, '--test-reporter-destination=stdout');
  args.push('--test-reporter=tap', `--test-reporter-destination=${tap}`);
  const child = (current = spawn(process.execPath, [...args, ...list], {
    stdio: 'inherit',
    env: { ...env, ...extraEnv },
    cwd: root,
  }));
  return new Promise((resolve) =>
    child.on('exit', (c, sig) => resolve({ name, code: c ?? (sig ? 1 : 0), failed: failedTests(tap, root) })),
  );
}

const results = [await run(files, {}, 'file-store')];
// The end-to-end suite once more with the chat log in Redis (test/helpers/start-gateway.ts reads
// ODA_TEST_STORE), so both stores pass the same behaviour tests.
const e2e = files.filter((f) => f.startsWith(join('test', 'e2e') + '/'));
if (redis.url && e2e.length > 0) {
  console.log(`\n# end-to-end suite again with the Redis store (${e2e.length} files)`);
  results.push(await run(e2e, { ODA_TEST_STORE: 'redis' }, 'redis-store'));
}
redis.stop();
rmSync(reports, { recursive: true, force: true });
console.log('');
for (const { name, code, failed } of results) {
  console.log(`# ${name} pass: ${code === 0 ? 'passed' : `failed (exit code ${code})`}`);
  for (const f of failed) console.log(`#   not ok: ${f}`);
}
process.exit(results.find((r) => r.code !== 0)?.code ?? 0);
