import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TRIM_MARKER } from '../../lib/trim-marker.ts';
import { cutMiddle, keepHeadAndTail, TRIM_MARKER_CHARS } from './cut-middle.ts';
import { cutParts, partCounts, REMOVED_PART_TEXT } from './cut-parts.ts';
import { isImageStandIn } from './tool-result-text.ts';
import { IMAGE_REMOVED_TEXT } from '../image-replay/index.ts';
import { IMAGE_PRUNED_TEXT } from '../cache-ttl-pruning/index.ts';
import { setAsideNote } from '../image-set-aside/index.ts';

const cut = (texts: string[], head: number, tail: number) => cutParts(texts, partCounts(texts), head, tail);

describe('cutParts', () => {
  test('ten blocks of 6,000: the head from the first, the tail from the last, [...] between', () => {
    const blocks = Array.from({ length: 10 }, (_, i) => String(i).repeat(6000));
    const out = cut(blocks, 4096, 1024);
    assert.deepEqual(out, [
      '0'.repeat(4096) + TRIM_MARKER,
      ...Array.from({ length: 8 }, () => REMOVED_PART_TEXT),
      '9'.repeat(1024),
    ]);
  });

  test('the head and tail may span several parts', () => {
    assert.deepEqual(cut(['abc', 'def', 'ghi', 'jkl'], 4, 4), ['abc', 'd' + TRIM_MARKER, 'i', 'jkl']);
  });

  test('a cut starting at a part boundary puts the marker at the start of the next part', () => {
    assert.deepEqual(cut(['abc', 'def', 'ghi'], 3, 2), ['abc', TRIM_MARKER, 'hi']);
  });

  test('head and tail zero keep only the marker; an empty part stays empty', () => {
    assert.deepEqual(cut(['', 'abc', 'def'], 0, 0), ['', TRIM_MARKER, REMOVED_PART_TEXT]);
  });

  test('code points, never code units: a pair on either side of a cut stays whole', () => {
    assert.deepEqual(cut(['a😀', '😀b', '𝔘𝔘'], 2, 1), ['a😀', TRIM_MARKER, '𝔘']);
  });

  test('one part gives what keepHeadAndTail and cutMiddle give', () => {
    const limits = { thresholdChars: TRIM_MARKER_CHARS + 30, headChars: 20, tailChars: 10 };
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '😀', '𝔘', 'é', '\uD800'), minLength: 31, maxLength: 200 }),
        (text) => {
          const [out] = cut([text], limits.headChars, limits.tailChars);
          assert.equal(out, keepHeadAndTail(text, limits.headChars, limits.tailChars));
          if ([...text].length > limits.thresholdChars) assert.equal(out, cutMiddle(text, limits));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('isImageStandIn', () => {
  test('knows the texts the gateway puts where an image was', () => {
    assert.ok(isImageStandIn(IMAGE_REMOVED_TEXT));
    assert.ok(isImageStandIn(IMAGE_PRUNED_TEXT));
    for (const note of [
      setAsideNote({ ordinal: 1 }),
      setAsideNote({ ordinal: 12, mediaType: 'image/png', width: 1024, height: 768, bytes: 524_288 }),
      setAsideNote({ ordinal: 3, mediaType: 'image/jpeg', path: 'data/attachments/ab/ab12.jpg' }),
      setAsideNote({ ordinal: 2, url: 'https://img.example/b.jpg?x=[1]' }),
    ]) {
      assert.ok(isImageStandIn(note), note);
    }
  });

  test('a tool text is not one, even when it quotes one', () => {
    assert.ok(!isImageStandIn('exit code 1'));
    assert.ok(!isImageStandIn(`log: ${IMAGE_REMOVED_TEXT}`));
    assert.ok(!isImageStandIn(`${setAsideNote({ ordinal: 1 })}\nand more output`));
    assert.ok(!isImageStandIn('[Image #1 was fine]'));
  });
});
