import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  appendFileSync,
  closeSync,
  openSync,
  readFileSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { logCheck } from './cli-check.ts';
import { readLogText } from './convert.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { chatFileOf } from './test-batches.ts';

async function run(args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await logCheck(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

test('log check of a chat larger than Node can read whole checks every line of it', async () => {
  const path = await chatFileOf(tempDir('oda-cli-check-large-'), 'big', 5);
  // Over 512 MiB (the longest string Node makes): a sparse stretch of NUL bytes cut into eight
  // lines of 64 MiB stands in for what a long-running agent logged, then one more event.
  const base = statSync(path).size;
  const fd = openSync(path, 'r+');
  try {
    for (let k = 1; k <= 8; k++) writeSync(fd, '\n', base + k * 2 ** 26);
  } finally {
    closeSync(fd);
  }
  appendFileSync(
    path,
    '{"seq":13,"at":10,"type":"message","role":"user","content":[{"kind":"text","text":"end"}]}\n',
  );
  assert.ok(statSync(path).size > 2 ** 29);
  const r = await run([path]);
  assert.deepEqual(r.err, []);
  assert.equal(r.code, 1);
  assert.deepEqual(r.out.slice(1, 5), [
    'version: 5 (current)',
    'header: {"version":5,"id":"big","createdAt":1}',
    // The five events before the stretch and the one after it; each NUL line held an event (5-12).
    'events: 6',
    'problems: 8',
  ]);
  const problems = r.out.slice(5);
  assert.equal(problems.length, 8);
  problems.forEach((p, i) => assert.match(p, new RegExp(`^ {2}line ${7 + i}: not valid JSON: `)));
});

test('log check reads a chat in pieces with the findings and messages of a whole read', async () => {
  // Over 3 MB, so the file is read in several chunks and its lines checked in several pieces.
  const path = await chatFileOf(tempDir('oda-cli-check-pieces-'), 'long', 3000, 1100);
  const lines = readFileSync(path, 'utf8').split('\n');
  // A line cut across a chunk, a damaged event, a seq gap, a blank line, a torn last line.
  lines[950] = lines[950]!.slice(0, 600);
  lines[1500] = '{"seq":1499,"at":10,"type":"message","role":"nobody","content":[]}';
  lines.splice(2200, 1);
  lines.splice(2500, 0, '');
  writeFileSync(path, lines.join('\n'));
  appendFileSync(path, '{"seq":3000,"at":11,"type":"mess');
  const whole = readLogText(readFileSync(path, 'utf8'));
  assert.deepEqual(
    whole.problems.map((p) => p.kind),
    ['invalid-json', 'invalid-event', 'seq-gap', 'blank-line', 'torn-line'],
  );
  const r = await run([path]);
  assert.equal(r.code, 1);
  assert.deepEqual(r.err, []);
  assert.deepEqual(r.out, [
    `file: ${path}`,
    'version: 5 (current)',
    `header: ${JSON.stringify(whole.header)}`,
    `events: ${whole.events.length}`,
    `problems: ${whole.problems.length}`,
    ...whole.problems.map((p) => `  ${p.message}`),
  ]);
});

test('log check of an empty file or a header cut short says why, as before', async () => {
  const dir = tempDir('oda-cli-check-short-');
  const empty = join(dir, 'empty.jsonl');
  writeFileSync(empty, '');
  assert.deepEqual(await run([empty]), {
    code: 1,
    out: [`file: ${empty}`],
    err: [`${empty}: chat log has no header line`],
  });
  const cut = join(dir, 'cut.jsonl');
  writeFileSync(cut, '{"version":5,"id":"x","crea');
  const r = await run([cut]);
  assert.equal(r.code, 1);
  assert.deepEqual(r.out, [`file: ${cut}`]);
  assert.match(r.err[0] ?? '', /^.*cut\.jsonl: chat log header \(line 1\) is not valid JSON: /);
  const only = join(dir, 'only.jsonl');
  writeFileSync(only, '{"version":5,"id":"x","createdAt":1}');
  assert.deepEqual((await run([only])).out.slice(3), ['events: 0', 'problems: none']);
});
