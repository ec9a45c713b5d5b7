// What `npm test` runs and what it reports (scripts/run-tests.mjs): the test files of the repository,
// and the failed tests of a TAP report.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Every `*.test.ts` under `root`, as paths relative to it. Every folder is searched but node_modules,
 * hidden ones and the default data directory (`data/` at the top), so a test in a new folder is
 * never left out.
 */
export function testFiles(root) {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name.startsWith('.') || (dir === root && name === 'data')) continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.test.ts')) out.push(relative(root, p));
    }
  };
  walk(root);
  return out;
}

/**
 * The failed tests of a TAP report's text, one line each: name, file (relative to `root`) and the
 * first line of the error. Suites that failed only through a subtest are left out.
 */
export function failedInTap(text, root) {
  const lines = text.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!m) continue;
    const block = [];
    for (let j = i + 1; j < lines.length && lines[j].trim() !== '...'; j++) block.push(lines[j].trim());
    if (block.includes("failureType: 'subtestsFailed'")) continue;
    const location = block
      .find((l) => l.startsWith('location:'))
      ?.slice('location:'.length)
      .trim();
    const errorAt = block.findIndex((l) => l.startsWith('error:'));
    let error = errorAt >= 0 ? block[errorAt].slice('error:'.length).trim() : '';
    if (/^[|>]-?$/.test(error)) error = block[errorAt + 1] ?? '';
    // The file only: under tsx the line and column are those of the transformed code.
    const file = location && relative(root, location.replace(/^'|'$/g, '').replace(/:\d+:\d+$/, ''));
    out.push(`${m[2]}${file ? ` (${file})` : ''}${error ? `: ${error}` : ''}`);
  }
  return out;
}

/** `failedInTap` of a report file; a pass that wrote no report says so. */
export function failedTests(tapFile, root) {
  let text;
  try {
    text = readFileSync(tapFile, 'utf8');
  } catch {
    return ['(no report was written)'];
  }
  return failedInTap(text, root);
}
