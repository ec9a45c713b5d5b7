import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppendFile } from './append-file.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

/**
 * The descriptors of this process open on `path`. Counting every descriptor of the process would
 * also count ones the runtime opens or closes on its own (the first asynchronous file call can set
 * up the thread pool's or io_uring's), which made the count differ by one on a loaded machine.
 */
const fdsOn = (path: string): number => {
  const target = realpathSync(path);
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === target) n++;
    } catch {
      // The directory listing's own descriptor is gone by the time it is read.
    }
  }
  return n;
};

for (const mode of ['always', 'batch'] as const) {
  test(`${mode}: appends land in order on one kept-open handle, and close flushes`, async () => {
    const dir = tempDir('oda-append-');
    const path = join(dir, 'chat.jsonl');
    writeFileSync(path, 'header\n');
    const file = new AppendFile(path, mode);
    assert.equal(fdsOn(path), 0);
    let size = 'header\n'.length;
    for (let i = 0; i < 20; i++) {
      const line = Buffer.from(`line ${i}\n`);
      await file.append(line, size);
      size += line.length;
      // Acknowledged means written: a reader sees it at once, in both modes.
      assert.ok(readFileSync(path, 'utf8').endsWith(`line ${i}\n`));
    }
    assert.equal(fdsOn(path), 1, 'one handle, kept open across appends');
    await file.close();
    assert.equal(fdsOn(path), 0, 'close releases the handle');
    assert.equal(readFileSync(path, 'utf8').split('\n').length, 22);
  });
}
