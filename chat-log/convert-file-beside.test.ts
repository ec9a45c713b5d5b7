// convertFileBeside: an older chat log converted into a current generation beside it, the original
// left untouched.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile, rm, stat, readdir, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLogText, convertFileBeside, besidePath, logToText } from './convert.ts';
import { convert, fixture, fixtureText } from './test-convert-fixtures.ts';

describe('convertFileBeside', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'oda-convert-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('writes <name>@v5.jsonl beside the original and leaves the original untouched', async () => {
    for (const v of [0, 1, 2, 3, 4] as const) {
      const original = join(dir, `chat-${v}.jsonl`);
      await copyFile(fixture(v), original);
      const before = await readFile(original, 'utf8');
      const out = await convertFileBeside(original);
      assert.equal(out, join(dir, `chat-${v}@v5.jsonl`));
      assert.equal(await readFile(original, 'utf8'), before);
      const read = readLogText(await readFile(out, 'utf8'));
      assert.equal(read.version, 5);
      assert.deepEqual(read.problems, []);
      assert.equal(logToText({ header: read.header, events: read.events }), logToText(convert(v)));
    }
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('.tmp-')),
      [],
    );
  });

  test('is idempotent and never replaces an existing generation', async () => {
    const original = join(dir, 'again.jsonl');
    await copyFile(fixture(2), original);
    const first = await convertFileBeside(original);
    const st1 = await stat(first);
    const second = await convertFileBeside(original);
    assert.equal(second, first);
    const st2 = await stat(second);
    assert.equal(st2.ino, st1.ino);
    assert.equal(st2.mtimeMs, st1.mtimeMs);
    // concurrent conversions agree on one file
    const other = join(dir, 'race.jsonl');
    await copyFile(fixture(1), other);
    const outs = await Promise.all([
      convertFileBeside(other),
      convertFileBeside(other),
      convertFileBeside(other),
    ]);
    assert.deepEqual(new Set(outs), new Set([besidePath(other)]));
    assert.deepEqual(readLogText(await readFile(besidePath(other), 'utf8')).problems, []);
  });

  test('a current log is its own current generation', async () => {
    const original = join(dir, 'now.jsonl');
    await copyFile(fixture(5), original);
    assert.equal(await convertFileBeside(original), original);
    await assert.rejects(stat(besidePath(original)), { code: 'ENOENT' });
  });

  test('refuses to reuse a foreign file at the target, and to convert a broken log', async () => {
    const original = join(dir, 'foreign.jsonl');
    await copyFile(fixture(0), original);
    await writeFile(besidePath(original), '{"version":5,"id":"someone-else","createdAt":0}\n');
    await assert.rejects(
      convertFileBeside(original),
      /foreign@v5\.jsonl exists but is not the v5 generation/,
    );
    const broken = join(dir, 'broken.jsonl');
    const lines = fixtureText(1).trimEnd().split('\n');
    lines[3] = '{"seq":2,"type":"request"}';
    await writeFile(broken, `${lines.join('\n')}\n`);
    await assert.rejects(
      convertFileBeside(broken),
      /cannot convert chat log broken\.jsonl from v1: line 4: invalid/,
    );
    await assert.rejects(stat(besidePath(broken)), { code: 'ENOENT' });
  });

  test('a torn last line of an old log is dropped from the converted generation', async () => {
    const torn = join(dir, 'torn.jsonl');
    await writeFile(torn, `${fixtureText(0)}{"seq":8,"at":1,"ty`);
    const out = await convertFileBeside(torn);
    assert.equal(readLogText(await readFile(out, 'utf8')).events.length, 8);
  });

  test("an earlier build's generation (named <name>.v4.jsonl then, beside a v3 log) is the one converted", async () => {
    const original = join(dir, 'gen.jsonl');
    await copyFile(fixture(3), original);
    // what an earlier build did: convert to v4 beside, then append there
    const v4Text = logToText(convert(3)).replace(/^\{"version":5,/, '{"version":4,');
    const appended = JSON.stringify({
      seq: readLogText(v4Text).events.length,
      at: 1800000000000,
      type: 'message',
      role: 'user',
      content: [{ kind: 'text', text: 'appended after the v4 conversion' }],
    });
    const v4Path = join(dir, 'gen.v4.jsonl');
    await writeFile(v4Path, `${v4Text}${appended}\n`);
    const v4Before = await readFile(v4Path, 'utf8');
    const out = await convertFileBeside(original);
    assert.equal(out, join(dir, 'gen@v5.jsonl'));
    const read = readLogText(await readFile(out, 'utf8'));
    assert.equal(read.version, 5);
    assert.deepEqual(read.problems, []);
    assert.deepEqual(read.events.at(-1), JSON.parse(appended));
    // neither earlier generation is written
    assert.equal(await readFile(v4Path, 'utf8'), v4Before);
    assert.equal(await readFile(original, 'utf8'), fixtureText(3));
  });

  test('a file of another chat at an intermediate name is not taken for a generation', async () => {
    const original = join(dir, 'mine.jsonl');
    await copyFile(fixture(2), original);
    await writeFile(join(dir, 'mine.v4.jsonl'), '{"version":4,"id":"mine.v4","createdAt":0}\n');
    const out = await convertFileBeside(original);
    assert.equal(await readFile(out, 'utf8'), logToText(convert(2)));
  });
});
