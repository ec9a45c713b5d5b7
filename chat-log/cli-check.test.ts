import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { logCheck } from './cli-check.ts';

const fixture = (v: number) => fileURLToPath(new URL(`./__fixtures__/v${v}.jsonl`, import.meta.url));

async function run(args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await logCheck(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

describe('log check', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'oda-cli-check-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('a clean log: version, header, event count, no problems, exit 0', async () => {
    const r = await run([fixture(5)]);
    assert.equal(r.code, 0);
    assert.deepEqual(r.out.slice(1), [
      'version: 5 (current)',
      'header: {"version":5,"id":"fixture-v5","createdAt":1700000000000,"cwd":"/srv/project","team":"research","conversation":{"kind":"main","session":"fixture-v5"}}',
      'events: 15',
      'problems: none',
    ]);
    const v4 = await run([fixture(4)]);
    assert.equal(v4.code, 0);
    assert.equal(v4.out[1], 'version: 4 (older; converted to v5 when opened)');
    const old = await run([fixture(1)]);
    assert.equal(old.code, 0);
    assert.equal(old.out[1], 'version: 1 (older; converted to v5 when opened)');
  });

  test('lists torn line, invalid event, reserved field and seq gap with line numbers; exit 1', async () => {
    const lines = (await readFile(fixture(4), 'utf8')).trimEnd().split('\n');
    const request = JSON.parse(lines[2] ?? '') as Record<string, unknown>;
    lines[2] = JSON.stringify({ ...request, notes: [{ callId: 'c1' }] });
    lines[4] = '{"seq":3,"at":1,"type":"message","role":"nobody","content":[]}';
    lines.splice(6, 1);
    const file = join(dir, 'bad.jsonl');
    await writeFile(file, `${lines.join('\n')}\n{"seq":7,"at`);
    const r = await run([file]);
    assert.equal(r.code, 1);
    assert.equal(r.out[3], 'events: 5');
    assert.equal(r.out[4], 'problems: 4');
    assert.match(r.out[5] ?? '', /^ {2}line 3: reserved field request\.notes must stay empty/);
    assert.match(r.out[6] ?? '', /^ {2}line 5: invalid message event \(v4\): role: /);
    assert.equal(r.out[7], '  line 7: seq 6 where 5 was expected');
    assert.match(r.out[8] ?? '', /^ {2}line 9: torn last line/);
  });

  test('--json: the findings as one JSON object, each problem with its line and kind', async () => {
    const clean = await run([fixture(5), '--json']);
    assert.equal(clean.code, 0);
    assert.deepEqual(clean.err, []);
    assert.equal(clean.out.length, 1);
    const found = JSON.parse(clean.out[0]!) as Record<string, unknown>;
    assert.deepEqual(
      { ...found, header: undefined },
      { file: fixture(5), version: 5, current: true, header: undefined, events: 15, problems: [] },
    );
    assert.equal((found.header as { id: string }).id, 'fixture-v5');
    const file = join(dir, 'torn-json.jsonl');
    await writeFile(file, `${await readFile(fixture(1), 'utf8')}{"seq":8,"at`);
    const torn = await run(['--json', file]);
    assert.equal(torn.code, 1);
    const tornFound = JSON.parse(torn.out[0]!) as { version: number; current: boolean; problems: unknown[] };
    assert.equal(tornFound.version, 1);
    assert.equal(tornFound.current, false);
    assert.deepEqual(tornFound.problems, [
      {
        line: 10,
        kind: 'torn-line',
        message: 'line 10: torn last line (no trailing newline, not valid JSON); ignored',
      },
    ]);
    assert.equal((await run([fixture(5), '--json', '--json'])).code, 2);
  });

  test('an unreadable header, an unknown version or a missing file: exit 1 with the reason', async () => {
    const file = join(dir, 'future.jsonl');
    await writeFile(file, '{"version":7,"id":"x","createdAt":0}\n');
    const r = await run([file]);
    assert.equal(r.code, 1);
    assert.deepEqual(r.err, [
      `${file}: unsupported chat log format version 7; this build reads versions 0 to 5`,
    ]);
    const missing = await run([join(dir, 'nope.jsonl')]);
    assert.equal(missing.code, 1);
    assert.match(missing.err[0] ?? '', /cannot read/);
    assert.equal((await run([])).code, 2);
  });

  test('--json: bad arguments, an unreadable file or no chat log is one JSON object naming the error, on stdout too', async () => {
    const future = join(dir, 'future-json.jsonl');
    await writeFile(future, '{"version":7,"id":"x","createdAt":0}\n');
    const missing = join(dir, 'nope.jsonl');
    const empty = join(dir, 'empty.jsonl');
    await writeFile(empty, '');
    const usage = 'usage: oda-gateway log check <file> [--json]';
    for (const [args, code, error, stderr] of [
      [['--json'], 2, { error: { kind: 'usage', message: usage } }, usage],
      [[fixture(5), fixture(4), '--json'], 2, { error: { kind: 'usage', message: usage } }, usage],
      [[fixture(5), '--json', '--json'], 2, { error: { kind: 'usage', message: usage } }, usage],
      [
        ['--json', future],
        1,
        {
          file: future,
          error: {
            kind: 'not-a-log',
            message: 'unsupported chat log format version 7; this build reads versions 0 to 5',
          },
        },
        `${future}: unsupported chat log format version 7; this build reads versions 0 to 5`,
      ],
      [
        ['--json', empty],
        1,
        { file: empty, error: { kind: 'not-a-log', message: 'chat log has no header line' } },
        `${empty}: chat log has no header line`,
      ],
    ] as const) {
      const r = await run([...args]);
      assert.equal(r.code, code, args.join(' '));
      assert.deepEqual(r.err, [stderr], args.join(' '));
      assert.equal(r.out.length, 1, args.join(' '));
      assert.deepEqual(JSON.parse(r.out[0]!), error, args.join(' '));
    }
    const unreadable = await run([missing, '--json']);
    assert.equal(unreadable.code, 1);
    assert.match(unreadable.err[0] ?? '', /: cannot read: ENOENT/);
    const said = JSON.parse(unreadable.out[0]!) as { file: string; error: { kind: string; message: string } };
    assert.equal(said.file, missing);
    assert.equal(said.error.kind, 'unreadable');
    assert.match(said.error.message, /^cannot read: ENOENT/);
    // Without --json, stdout holds no JSON.
    assert.deepEqual((await run([missing])).out, []);
  });

  test('through the oda-gateway launcher', async () => {
    const bin = fileURLToPath(new URL('../bin/oda-gateway.mjs', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'log', 'check', fixture(0)]);
    assert.match(stdout, /^version: 0 \(older; converted to v5 when opened\)$/m);
    assert.match(stdout, /^events: 8$/m);
    await assert.rejects(
      promisify(execFile)(process.execPath, [bin, 'log', 'check', join(dir, 'nope.jsonl')]),
      {
        code: 1,
      },
    );
    await assert.rejects(promisify(execFile)(process.execPath, [bin, 'frobnicate']), (err: unknown) => {
      const e = err as { code?: number; stderr?: string };
      assert.equal(e.code, 2);
      assert.match(e.stderr ?? '', /^frobnicate: unknown command$/m);
      assert.match(e.stderr ?? '', /^usage: oda-gateway <command>/m);
      return true;
    });
  });
});
