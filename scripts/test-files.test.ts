import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { failedInTap, failedTests, testFiles } from './test-files.mjs';
import { tempDir } from '../test/helpers/temp-dir.ts';

const root = new URL('..', import.meta.url).pathname;

test('npm test finds every test file the repository tracks, config/ included', (t) => {
  const found = testFiles(root);
  assert.ok(found.includes('config/config.test.ts'), 'config/config.test.ts is run');
  const git = spawnSync('git', ['ls-files', '*.test.ts'], { cwd: root, encoding: 'utf8' });
  if (git.status !== 0) return t.skip('not a git checkout');
  const missed = git.stdout
    .trim()
    .split('\n')
    .filter((f) => !found.includes(f));
  assert.deepEqual(missed, [], 'tracked test files npm test would not run');
});

test('the search skips node_modules, hidden folders and the top-level data directory only', () => {
  const dir = tempDir('oda-test-files-');
  const file = (path: string) => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), '');
  };
  for (const path of [
    'a.test.ts',
    'new-room/deep/b.test.ts',
    'lib/data/c.test.ts',
    'data/chats/d.test.ts',
    'node_modules/x/e.test.ts',
    'lib/node_modules/f.test.ts',
    '.build/g.test.ts',
    'lib/h.ts',
    'lib/i.test.mjs',
  ])
    file(path);
  assert.deepEqual(testFiles(dir).sort(), ['a.test.ts', 'lib/data/c.test.ts', 'new-room/deep/b.test.ts']);
});

test('the failed tests of a real TAP report: name, file and error, suites left out', () => {
  const dir = tempDir('oda-test-report-');
  const tap = join(dir, 'report.tap');
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
      'scripts/__fixtures__/failing-tests.ts',
    ],
    // Without the runner's own marker, which would make the inner run skip its file.
    { cwd: root, encoding: 'utf8', env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
  );
  assert.equal(run.status, 1, run.stderr);
  assert.deepEqual(failedTests(tap, root), [
    'fails at the top (scripts/__fixtures__/failing-tests.ts): Expected values to be strictly equal:',
    "fails inside a suite (scripts/__fixtures__/failing-tests.ts): 'boom inside'",
  ]);
  assert.deepEqual(failedInTap(readFileSync(tap, 'utf8').replace(/not ok/g, 'ok'), root), []);
  assert.deepEqual(failedTests(join(dir, 'missing.tap'), root), ['(no report was written)']);
});
