import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  REMOVED_PART_TEXT,
  SOFT_TRIM_SEPARATOR,
  isSoftTrimmed,
  softTrimNote,
  softTrimParts,
} from './soft-trim.ts';

const defaults = { maxChars: 4000, headChars: 1500, tailChars: 1500 };

function hasLoneSurrogate(text: string): boolean {
  return /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

describe('softTrimParts', () => {
  test('keeps head and tail with the separator and the exact note', () => {
    const text = 'H'.repeat(1500) + 'm'.repeat(3000) + 'T'.repeat(1500);
    const [out] = softTrimParts([text], defaults) ?? [];
    assert.equal(
      out,
      'H'.repeat(1500) +
        '\n...\n' +
        'T'.repeat(1500) +
        '\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of 6000 chars.]',
    );
  });

  test('a result at maxChars stays; one character more is trimmed', () => {
    const limits = { maxChars: 200, headChars: 20, tailChars: 20 };
    assert.equal(softTrimParts(['x'.repeat(200)], limits), undefined);
    assert.ok(softTrimParts(['x'.repeat(201)], limits));
  });

  test('stays when head and tail already cover the text, or the note would not pay for itself', () => {
    assert.equal(softTrimParts(['x'.repeat(100)], { maxChars: 50, headChars: 60, tailChars: 40 }), undefined);
    // 100 - 10 - 10 = 80 removed, but separator + note add more than that.
    assert.equal(softTrimParts(['x'.repeat(100)], { maxChars: 50, headChars: 10, tailChars: 10 }), undefined);
  });

  test('trims across several text parts, keeping the part count', () => {
    const parts = ['a'.repeat(300), 'b'.repeat(300), 'c'.repeat(300)];
    const out = softTrimParts(parts, { maxChars: 500, headChars: 400, tailChars: 200 });
    assert.deepEqual(out, [
      'a'.repeat(300),
      'b'.repeat(100) + SOFT_TRIM_SEPARATOR,
      'c'.repeat(200) + softTrimNote(400, 200, 900),
    ]);
  });

  test('parts wholly inside the removed middle hold the removed-part mark, never nothing (Anthropic refuses empty text)', () => {
    const parts = ['a'.repeat(300), 'b'.repeat(300), 'c'.repeat(300), 'd'.repeat(300)];
    const out = softTrimParts(parts, { maxChars: 500, headChars: 100, tailChars: 100 });
    assert.deepEqual(out, [
      'a'.repeat(100) + SOFT_TRIM_SEPARATOR,
      REMOVED_PART_TEXT,
      REMOVED_PART_TEXT,
      'd'.repeat(100) + softTrimNote(100, 100, 1200),
    ]);
  });

  test('stays when the marks of many short parts in the cut would outweigh what it saves', () => {
    const parts = ['a'.repeat(100), ...Array.from({ length: 200 }, () => 'b'), 'c'.repeat(100)];
    assert.equal(softTrimParts(parts, { maxChars: 250, headChars: 100, tailChars: 100 }), undefined);
  });

  test('the note ends the last non-empty part; trailing empty parts stay empty', () => {
    const out = softTrimParts(['x'.repeat(1000), ''], { maxChars: 100, headChars: 10, tailChars: 10 });
    assert.deepEqual(out, [
      'x'.repeat(10) + SOFT_TRIM_SEPARATOR + 'x'.repeat(10) + softTrimNote(10, 10, 1000),
      '',
    ]);
  });

  test('counts code points and never splits a surrogate pair', () => {
    const text = '😀'.repeat(500);
    const [out] = softTrimParts([text], { maxChars: 100, headChars: 7, tailChars: 5 }) ?? [];
    assert.equal(out, '😀'.repeat(7) + SOFT_TRIM_SEPARATOR + '😀'.repeat(5) + softTrimNote(7, 5, 500));
  });

  test('an already trimmed result is left alone', () => {
    const limits = { maxChars: 100, headChars: 60, tailChars: 60 };
    const [once] = softTrimParts(['y'.repeat(1000)], limits) ?? [];
    assert.ok(once && once.length > 100);
    assert.ok(isSoftTrimmed(once));
    assert.equal(softTrimParts([once], limits), undefined);
  });

  test('property: joined parts (less the removed-part marks) equal the trim of the joined text; parts keep count; no part that had text is empty; no lone surrogates', () => {
    const chunk = fc
      .array(fc.constantFrom('a', 'Z', ' ', '\n', '漢', 'か', '한', '😀', 'é'), { maxLength: 40 })
      .chain((units) => fc.nat(30).map((k) => units.join('').repeat(k)));
    fc.assert(
      fc.property(
        fc.array(chunk, { minLength: 1, maxLength: 5 }),
        fc.nat(300),
        fc.nat(120),
        fc.nat(120),
        (parts, maxChars, headChars, tailChars) => {
          const limits = { maxChars, headChars, tailChars };
          const out = softTrimParts(parts, limits);
          const whole = softTrimParts([parts.join('')], limits);
          if (!out) {
            // Only the marks of parts the cut takes whole can make a trim that pays for the joined
            // text not pay for the parts.
            if (whole) {
              const saved = [...parts.join('')].length - [...whole[0]!].length;
              assert.ok(saved <= parts.length * REMOVED_PART_TEXT.length, `saved ${saved}`);
            }
            return;
          }
          assert.equal(out.length, parts.length);
          parts.forEach((part, i) => {
            if (part !== '') assert.notEqual(out[i], '', `part ${i} had text`);
          });
          const marksGone = out.map((p, i) => (p === REMOVED_PART_TEXT && parts[i] !== p ? '' : p));
          assert.deepEqual([marksGone.join('')], whole);
          const total = [...parts.join('')].length;
          assert.ok([...out.join('')].length < total);
          for (const part of out) assert.equal(hasLoneSurrogate(part), false);
          const joined = out.join('');
          assert.ok(joined.startsWith([...parts.join('')].slice(0, headChars).join('')));
          assert.ok(joined.endsWith(softTrimNote(headChars, tailChars, total)));
        },
      ),
    );
  });
});
