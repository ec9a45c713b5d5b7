#!/usr/bin/env node
// `npm run test:clients`: installs the real agent CLIs pinned in test/clients/package.json (their
// own lock file, so the gateway's `npm ci` stays light; both ship native binaries inside their npm
// packages, nothing else is downloaded), then runs the real-client tests (*.client-test.ts in this
// folder) with node's test runner through tsx. Arguments narrow the files by substring.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const here = new URL('.', import.meta.url).pathname;
const root = join(here, '..', '..');

function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'inherit', cwd: root, ...opts });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** True when node_modules holds exactly the versions the lock file names. */
function installedAsLocked() {
  const lock = JSON.parse(readFileSync(join(here, 'package-lock.json'), 'utf8'));
  for (const [path, entry] of Object.entries(lock.packages ?? {})) {
    if (path === '' || entry.optional) continue;
    const manifest = join(here, path, 'package.json');
    if (!existsSync(manifest)) return false;
    if (JSON.parse(readFileSync(manifest, 'utf8')).version !== entry.version) return false;
  }
  return true;
}

if (!installedAsLocked()) {
  console.log('# installing the real clients (npm ci --prefix test/clients)');
  const code = await run('npm', ['ci', '--prefix', relative(root, here), '--no-audit', '--no-fund']);
  if (code !== 0) process.exit(code);
}

// The client tests import the SDKs installed here, which the root type check leaves out: they are
// checked here, once installed (test/clients/tsconfig.json).
console.log('# type-checking the real-client tests (tsc -p test/clients)');
const checked = await run(process.execPath, [
  join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
  '--noEmit',
  '-p',
  relative(root, here),
]);
if (checked !== 0) process.exit(checked);

const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.client-test.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .map((f) => relative(root, join(here, f)));
if (files.length === 0) {
  console.error('no client test files found');
  process.exit(1);
}
// One file at a time: each test drives a real CLI, and the machine's cores are shared.
process.exit(await run(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files]));
