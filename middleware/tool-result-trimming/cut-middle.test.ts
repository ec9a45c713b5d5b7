import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TRIM_MARKER } from '../../lib/trim-marker.ts';
import {
  assertCutLimits,
  countCodePoints,
  cutMiddle,
  TRIM_MARKER_CHARS,
  type CutLimits,
} from './cut-middle.ts';

const codePoints = (s: string): string[] => Array.from(s);
const hasLoneSurrogate = (s: string): boolean =>
  /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

/** Text mixing ASCII, BMP, astral emoji, ZWJ sequences and flags, so cuts land near pairs. */
const mixedText = fc.oneof(
  fc.string({
    unit: fc.constantFrom('a', 'Z', ' ', '\n', 'é', '中', '😀', '𝔘', '👩‍👩‍👧', '🇫🇷', '\u0301'),
    maxLength: 400,
  }),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
);

/** Limits that satisfy the config contract: head + marker + tail fits in the threshold. */
const validLimits: fc.Arbitrary<CutLimits> = fc
  .record({ headChars: fc.nat(60), tailChars: fc.nat(60), slack: fc.nat(80) })
  .map(({ headChars, tailChars, slack }) => ({
    headChars,
    tailChars,
    thresholdChars: headChars + TRIM_MARKER_CHARS + tailChars + slack,
  }));

describe('cutMiddle', () => {
  test('the marker length counts in code points, as the config schema counts it', () => {
    assert.equal(TRIM_MARKER_CHARS, [...TRIM_MARKER].length);
  });

  test('a text of exactly thresholdChars code points is untouched; one more is cut', () => {
    const limits = { thresholdChars: 50, headChars: 5, tailChars: 3 };
    const exact = '😀'.repeat(50); // 100 code units, 50 code points
    assert.equal(cutMiddle(exact, limits), exact);
    const over = 'a' + exact;
    assert.equal(cutMiddle(over, limits), 'a😀😀😀😀' + TRIM_MARKER + '😀😀😀');
  });

  test('head and tail zero keep only the marker', () => {
    const limits = { thresholdChars: TRIM_MARKER_CHARS, headChars: 0, tailChars: 0 };
    assert.equal(cutMiddle('x'.repeat(TRIM_MARKER_CHARS + 1), limits), TRIM_MARKER);
    assert.equal(cutMiddle(TRIM_MARKER, limits), TRIM_MARKER);
  });

  test('a lone surrogate counts as one code point and is kept whole', () => {
    const limits = { thresholdChars: TRIM_MARKER_CHARS + 2, headChars: 1, tailChars: 1 };
    const text = '\uD800' + 'b'.repeat(TRIM_MARKER_CHARS + 5) + '\uDFFF';
    assert.equal(cutMiddle(text, limits), '\uD800' + TRIM_MARKER + '\uDFFF');
  });

  test('limits that would let a trimmed text exceed the threshold are refused', () => {
    assert.throws(() => cutMiddle('x', { thresholdChars: 10, headChars: 5, tailChars: 5 }), RangeError);
    assert.throws(() => assertCutLimits({ thresholdChars: 0, headChars: 0, tailChars: 0 }), RangeError);
    assert.throws(() => assertCutLimits({ thresholdChars: 100, headChars: 1.5, tailChars: 0 }), RangeError);
    assert.throws(() => assertCutLimits({ thresholdChars: 100, headChars: -1, tailChars: 0 }), RangeError);
  });

  test('the default limits cut a 10 MB astral text by code points', () => {
    const limits = { thresholdChars: 8192, headChars: 4096, tailChars: 1024 };
    const text = 'h'.repeat(4095) + '😀' + '𝔘'.repeat(5_000_000) + '🇫' + 't'.repeat(1023);
    const out = cutMiddle(text, limits);
    assert.equal(out, 'h'.repeat(4095) + '😀' + TRIM_MARKER + '🇫' + 't'.repeat(1023));
    assert.equal(countCodePoints(out), 4096 + TRIM_MARKER_CHARS + 1024);
  });

  test('countCodePoints stops early past its limit', () => {
    assert.equal(countCodePoints('😀😀😀😀', 1), 2);
    assert.equal(countCodePoints('😀😀😀😀'), 4);
    assert.equal(countCodePoints(''), 0);
  });

  test('properties: bounded, idempotent, exact head and tail, no split pairs', () => {
    fc.assert(
      fc.property(mixedText, validLimits, (text, limits) => {
        const out = cutMiddle(text, limits);
        const inPoints = codePoints(text);
        const outPoints = codePoints(out);
        assert.ok(outPoints.length <= inPoints.length, 'never longer');
        assert.equal(cutMiddle(out, limits), out, 'idempotent');
        assert.ok(!hasLoneSurrogate(out), 'no lone surrogate');
        if (inPoints.length <= limits.thresholdChars) {
          assert.equal(out, text);
        } else {
          assert.ok(outPoints.length <= limits.thresholdChars, 'within threshold');
          const head = inPoints.slice(0, limits.headChars).join('');
          const tail = limits.tailChars === 0 ? '' : inPoints.slice(-limits.tailChars).join('');
          assert.equal(out, head + TRIM_MARKER + tail);
        }
      }),
      { numRuns: 500 },
    );
  });

  test('property: texts long enough to be cut, near surrogate pairs', () => {
    const long = fc.string({ unit: fc.constantFrom('a', '😀', '𝔘', '👩‍👩‍👧'), minLength: 60, maxLength: 300 });
    fc.assert(
      fc.property(long, validLimits, (text, limits) => {
        const out = cutMiddle(text, limits);
        const points = codePoints(text);
        if (points.length > limits.thresholdChars) {
          assert.ok(out.includes(TRIM_MARKER));
          assert.ok(out.startsWith(points.slice(0, limits.headChars).join('')));
          assert.ok(
            out.endsWith(limits.tailChars === 0 ? TRIM_MARKER : points.slice(-limits.tailChars).join('')),
          );
        }
        assert.ok(!hasLoneSurrogate(out));
        assert.equal(cutMiddle(out, limits), out);
      }),
      { numRuns: 300 },
    );
  });
});
