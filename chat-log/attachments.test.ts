import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { AttachmentStore, decodeImageSource, describeImage } from './attachments.ts';
import { sha256Hex } from '../lib/sha256.ts';
import { makeGif, makeJpeg, makePng, makeWebp } from './test-images.ts';
import { isOdaError } from '../lib/errors.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

const tmp = () => tempDir('oda-attach-');

describe('describeImage', () => {
  const cases: Array<[string, Buffer, string, number, number]> = [
    ['png', makePng(3, 2), 'image/png', 3, 2],
    ['gif', makeGif(17, 9), 'image/gif', 17, 9],
    ['jpeg baseline', makeJpeg(640, 480), 'image/jpeg', 640, 480],
    ['jpeg progressive', makeJpeg(33, 4000, 0xc2), 'image/jpeg', 33, 4000],
    ['webp lossy', makeWebp(320, 200, 'VP8'), 'image/webp', 320, 200],
    ['webp lossless', makeWebp(16383, 1, 'VP8L'), 'image/webp', 16383, 1],
    ['webp extended', makeWebp(20000, 9000, 'VP8X'), 'image/webp', 20000, 9000],
  ];
  for (const [name, bytes, mediaType, width, height] of cases) {
    test(name, () => assert.deepEqual(describeImage(bytes), { mediaType, width, height }));
  }

  test('unknown or truncated data is not an image', () => {
    assert.equal(describeImage(Buffer.from('hello world, not an image at all')), undefined);
    assert.equal(describeImage(makePng(3, 2).subarray(0, 20)), undefined);
    assert.equal(describeImage(makeJpeg(5, 5).subarray(0, 30)), undefined);
    assert.equal(describeImage(Buffer.from([0xff, 0xd8, 0xff, 0xda, 0, 2])), undefined);
    assert.equal(describeImage(Buffer.alloc(0)), undefined);
  });

  test('never throws on arbitrary bytes, including corrupted real headers', () => {
    const seeds = [
      makePng(2, 2),
      makeGif(2, 2),
      makeJpeg(2, 2),
      makeWebp(2, 2, 'VP8'),
      makeWebp(2, 2, 'VP8X'),
    ];
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(4), fc.nat(80), (noise, which, cut) => {
        const seed = seeds[which] ?? Buffer.alloc(0);
        const mixed = Buffer.concat([seed.subarray(0, cut), Buffer.from(noise)]);
        describeImage(mixed);
        describeImage(noise);
      }),
    );
  });

  test('PNG dimensions round-trip for any size', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        (w, h) => {
          const header = makePng(1, 1);
          header.writeUInt32BE(w, 16);
          header.writeUInt32BE(h, 20);
          assert.deepEqual(describeImage(header), { mediaType: 'image/png', width: w, height: h });
        },
      ),
    );
  });
});

describe('decodeImageSource', () => {
  const png = makePng(1, 1);
  test('data URL', () => {
    const out = decodeImageSource({ kind: 'url', url: `data:image/png;base64,${png.toString('base64')}` });
    assert.deepEqual(out, { bytes: png, mediaType: 'image/png' });
  });
  test('Anthropic base64 with media type', () => {
    const out = decodeImageSource({ kind: 'base64', mediaType: 'image/PNG', data: png.toString('base64') });
    assert.deepEqual(out, { bytes: png, mediaType: 'image/png' });
  });
  test('data URL inside a base64 source, with line breaks in the data', () => {
    const b64 = png.toString('base64').replace(/(.{10})/g, '$1\n');
    const out = decodeImageSource({
      kind: 'base64',
      mediaType: '',
      data: `data:image/png;charset=x;base64,${b64}`,
    });
    assert.deepEqual(out, { bytes: png, mediaType: 'image/png' });
  });
  test('remote URLs, non-base64 data URLs and garbage give undefined', () => {
    assert.equal(decodeImageSource({ kind: 'url', url: 'https://example.com/a.png' }), undefined);
    assert.equal(decodeImageSource({ kind: 'url', url: 'data:text/plain,hello' }), undefined);
    assert.equal(
      decodeImageSource({ kind: 'base64', mediaType: 'image/png', data: 'not base64!!' }),
      undefined,
    );
    assert.equal(decodeImageSource({ kind: 'base64', mediaType: 'image/png', data: '' }), undefined);
  });
});

describe('AttachmentStore', () => {
  test('writes a byte-identical read-only copy named by content hash', async () => {
    const dir = tmp();
    const store = new AttachmentStore({ dir: path.join(dir, 'attachments') });
    const png = makePng(4, 3, 7);
    const { attachment, path: p } = await store.put(png, 'image/png');
    assert.deepEqual(attachment, {
      sha256: sha256Hex(png),
      mediaType: 'image/png',
      bytes: png.length,
      width: 4,
      height: 3,
    });
    assert.equal(p, path.join(dir, 'attachments', `${sha256Hex(png)}.png`));
    assert.equal(store.pathFor(attachment), p);
    assert.equal(fs.statSync(p).mode & 0o777, 0o444);
    assert.ok(fs.readFileSync(p).equals(png));
    assert.deepEqual(
      fs.readdirSync(path.join(dir, 'attachments')).filter((n) => n.startsWith('.')),
      [],
      'no temporary files left',
    );
  });

  test('a second put of the same bytes leaves the existing copy alone', async () => {
    const dir = tmp();
    const store = new AttachmentStore({ dir });
    const jpeg = makeJpeg(10, 20);
    const first = await store.put(jpeg);
    const before = fs.statSync(first.path);
    const again = await Promise.all([store.put(jpeg), store.put(jpeg), store.put(jpeg)]);
    for (const r of again) assert.deepEqual(r, first);
    const after = fs.statSync(first.path);
    assert.equal(after.ino, before.ino);
    assert.equal(after.mtimeMs, before.mtimeMs);
    assert.deepEqual(fs.readdirSync(dir), [`${sha256Hex(jpeg)}.jpg`]);
  });

  test('refuses bytes that are not a known image, storing nothing', async () => {
    const dir = tmp();
    const store = new AttachmentStore({ dir });
    await assert.rejects(store.put(Buffer.from('<svg/>'), 'image/svg+xml'), (err: unknown) => {
      assert.ok(isOdaError(err));
      assert.equal(err.status, 400);
      assert.match(err.message, /declared image\/svg\+xml/);
      return true;
    });
    assert.deepEqual(fs.readdirSync(dir), []);
  });

  test('each team has a folder of its own; a name that is not a team name is refused', async () => {
    const dir = tmp();
    const store = new AttachmentStore({ dir });
    const png = makePng(2, 2, 9);
    const shared = await store.put(png);
    const research = await store.forTeam('research').put(png);
    const design = await store.forTeam('design').put(png);
    assert.equal(shared.path, path.join(dir, `${sha256Hex(png)}.png`));
    assert.equal(research.path, path.join(dir, 'teams', 'research', `${sha256Hex(png)}.png`));
    assert.equal(design.path, path.join(dir, 'teams', 'design', `${sha256Hex(png)}.png`));
    assert.equal(store.forTeam('research').pathFor(research.attachment), research.path);
    assert.equal(store.forTeam(undefined), store);
    for (const bad of ['..', '.', 'a/b', '', 'x'.repeat(65)])
      assert.throws(() => store.forTeam(bad), /not a team name/);
  });
});
