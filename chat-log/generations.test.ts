/**
 * The names of converted generations (`generations.ts`): a name no chat id can have, and the move
 * of a generation an earlier build saved under a chat's name.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, link, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convertFileBeside, logToText, readLogText, upgradeToCurrent } from './convert.ts';
import { besidePath, legacyGenerationTarget, moveGeneration } from './generations.ts';
import { isChatId } from './chat-id.ts';
import type { FormatVersion } from './format/index.ts';

const fixture = (v: FormatVersion) => new URL(`./__fixtures__/v${v}.jsonl`, import.meta.url).pathname;

function convert(v: FormatVersion) {
  const read = readLogText(readFileSync(fixture(v), 'utf8'));
  return upgradeToCurrent(read.version, read.header, read.events);
}

describe('generation names', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'oda-generations-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('the converted generation of <chat>.jsonl is <chat>@v5.jsonl, never the file of a chat', () => {
    assert.equal(besidePath('/d/chats/fixture-v4.jsonl'), '/d/chats/fixture-v4@v5.jsonl');
    assert.equal(isChatId('fixture-v4@v5'), false);
    assert.equal(isChatId('fixture-v4.v5'), true, 'the name earlier builds used is a chat id');
  });

  test('a file is taken for an earlier build’s generation only when its name and header agree', () => {
    const at = (name: string) => join('/d/chats', name);
    assert.equal(legacyGenerationTarget(at('a.v5.jsonl'), { version: 5, id: 'a' }), at('a@v5.jsonl'));
    assert.equal(legacyGenerationTarget(at('a.v4.jsonl'), { version: 4, id: 'a' }), at('a@v4.jsonl'));
    assert.equal(legacyGenerationTarget(at('a.v5.jsonl'), { version: 4, id: 'a' }), undefined);
    assert.equal(legacyGenerationTarget(at('a.v5.jsonl'), { version: 5, id: 'a.v5' }), undefined);
    assert.equal(legacyGenerationTarget(at('b.v5.jsonl'), { version: 5, id: 'a' }), undefined);
    assert.equal(legacyGenerationTarget(at('a.v5.jsonl'), {}), undefined);
  });

  test('moveGeneration never replaces another file, and finishes a move cut short', async () => {
    const from = join(dir, 'm.v5.jsonl');
    const to = join(dir, 'm@v5.jsonl');
    await writeFile(from, 'one\n');
    assert.equal(await moveGeneration(from, to), true);
    assert.equal(await readFile(to, 'utf8'), 'one\n');
    await assert.rejects(stat(from), { code: 'ENOENT' });
    assert.equal(await moveGeneration(from, to), true, 'already moved');
    // Cut short: both names on one file.
    await link(to, from);
    assert.equal(await moveGeneration(from, to), true);
    await assert.rejects(stat(from), { code: 'ENOENT' });
    // Another file at the new name stays, and so does the old one.
    await writeFile(from, 'two\n');
    assert.equal(await moveGeneration(from, to), false);
    assert.equal(await readFile(to, 'utf8'), 'one\n');
    assert.equal(await readFile(from, 'utf8'), 'two\n');
  });

  test("an earlier build's v5 generation, named <name>.v5.jsonl then, is moved to <name>@v5.jsonl as it is", async () => {
    const original = join(dir, 'moved.jsonl');
    await copyFile(fixture(2), original);
    const legacy = join(dir, 'moved.v5.jsonl');
    // Converted by an earlier build, then appended to: it is kept, not converted again.
    const appended = JSON.stringify({
      seq: convert(2).events.length,
      at: 1800000000000,
      type: 'message',
      role: 'user',
      content: [{ kind: 'text', text: 'appended in the old name' }],
    });
    const text = `${logToText(convert(2))}${appended}\n`;
    await writeFile(legacy, text);
    const ino = (await stat(legacy)).ino;
    assert.equal(await convertFileBeside(original), join(dir, 'moved@v5.jsonl'));
    assert.equal(await readFile(join(dir, 'moved@v5.jsonl'), 'utf8'), text);
    assert.equal((await stat(join(dir, 'moved@v5.jsonl'))).ino, ino, 'the same file');
    await assert.rejects(stat(legacy), { code: 'ENOENT' });
    // A file of chat mine-too.v5 under that name is that chat's, and stays.
    const mine = join(dir, 'mine-too.jsonl');
    await copyFile(fixture(1), mine);
    await writeFile(join(dir, 'mine-too.v5.jsonl'), '{"version":5,"id":"mine-too.v5","createdAt":0}\n');
    assert.equal(await convertFileBeside(mine), join(dir, 'mine-too@v5.jsonl'));
    assert.equal(
      await readFile(join(dir, 'mine-too.v5.jsonl'), 'utf8'),
      '{"version":5,"id":"mine-too.v5","createdAt":0}\n',
    );
  });
});
