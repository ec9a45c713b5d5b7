import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreationSync } from './creation-sync.ts';
import { syncDir, syncFile } from './file-write-temp.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

/** A CreationSync over a real folder whose syncs are the real ones, recorded in order. */
function watched(delayMs: number) {
  const dir = tempDir('oda-creation-');
  const calls: string[] = [];
  const sync = new CreationSync(dir, delayMs, {
    file: async (p) => {
      calls.push(`file ${path.basename(p)}`);
      await syncFile(p);
    },
    dir: async (d) => {
      calls.push(`dir ${d === dir}`);
      await syncDir(d);
    },
  });
  const make = (name: string) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, '{"header":1}\n');
    return p;
  };
  return { dir, calls, sync, make };
}

describe('CreationSync: new chat files synced in the background, in batches', () => {
  test('nothing is synced when a file is added; the files, then the folder once, after the delay', async () => {
    const w = watched(20);
    w.sync.add(w.make('a.jsonl'));
    w.sync.add(w.make('b.jsonl'));
    assert.deepEqual(w.calls, [], 'the creator does not wait for a sync');
    // After the delay the syncs run; a busy machine may take a while over the two file syncs.
    for (let waited = 0; w.calls.length < 3 && waited < 10_000; waited += 20) await sleep(20);
    assert.deepEqual(w.calls.slice(0, 2).sort(), ['file a.jsonl', 'file b.jsonl']);
    assert.deepEqual(w.calls.slice(2), ['dir true'], 'one folder sync for both, after their data');
  });

  test('flush syncs at once what is pending, and what was added while a sync ran', async () => {
    const w = watched(60_000);
    w.sync.add(w.make('a.jsonl'));
    const flushed = w.sync.flush();
    w.sync.add(w.make('b.jsonl'));
    await flushed;
    assert.deepEqual(w.calls, ['file a.jsonl', 'dir true', 'file b.jsonl', 'dir true']);
    await w.sync.flush();
    assert.equal(w.calls.length, 4, 'a flush with nothing pending syncs nothing');
  });

  test('a file removed before its sync is skipped without an error', async () => {
    const w = watched(60_000);
    const p = w.make('gone.jsonl');
    w.sync.add(p);
    fs.rmSync(p);
    await w.sync.flush();
    assert.deepEqual(w.calls, ['file gone.jsonl', 'dir true']);
  });
});
