import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppendFile } from './append-file.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const openFds = () => readdirSync('/proc/self/fd').length;

for (const mode of ['always', 'batch'] as const) {
  test(`${mode}: appends land in order on one kept-open handle, and close flushes`, async () => {
    const dir = tempDir('oda-append-');
    const path = join(dir, 'chat.jsonl');
    writeFileSync(path, 'header\n');
    const file = new AppendFile(path, mode);
    const before = openFds();
    let size = 'header\n'.length;
    for (let i = 0; i < 20; i++) {
      const line = Buffer.from(`line ${i}\n`);
      await file.append(line, size);
      size += line.length;
      // Acknowledged means written: a reader sees it at once, in both modes.
      assert.ok(readFileSync(path, 'utf8').endsWith(`line ${i}\n`));
    }
    assert.equal(openFds() - before, 1, 'one handle, kept open across appends');
    await file.close();
    assert.equal(openFds(), before);
    assert.equal(readFileSync(path, 'utf8').split('\n').length, 22);
  });
}
