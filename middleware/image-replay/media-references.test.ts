import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  MEDIA_REFERENCE_REMOVED_TEXT as R,
  MEDIA_REFERENCE_SOURCE,
  hasMediaReference,
  removeMediaReferences,
} from './media-references.ts';

describe('removeMediaReferences', () => {
  const cases: Array<[string, string, number]> = [
    ['see [media attached: /m/a.png (image/png) | /m/a.png] ok', `see ${R} ok`, 1],
    ['[media attached 1/2: a.png]\n[media attached 2/2: b.png]', `${R}\n${R}`, 2],
    ['[MEDIA ATTACHED: C:\\inbound\\file.jpg (image/jpeg)]', R, 1],
    ['[Image: source: /tmp/x.jpg] what is it', `${R} what is it`, 1],
    ['[Image:source:https://x/y.png]', R, 1],
    ['file media://inbound/abc.jpg here', `file ${R} here`, 1],
    ['(media://inbound/abc.jpg)\tnext', `(${R}\tnext`, 1],
    // A reference inside a bracketed one goes with it, once.
    ['[media attached: media://inbound/q.png]', R, 1],
    // An unclosed bracket does not swallow the following lines; the URI on its own still goes.
    ['[media attached: oops\nmedia://inbound/x rest', `[media attached: oops\n${R} rest`, 1],
    [
      'no references, [Image] and media://outbound/x stay',
      'no references, [Image] and media://outbound/x stay',
      0,
    ],
  ];
  for (const [input, output, count] of cases) {
    test(JSON.stringify(input), () => {
      assert.deepEqual(removeMediaReferences(input), { text: output, removed: count });
      assert.deepEqual(removeMediaReferences(output), { text: output, removed: 0 });
      assert.equal(hasMediaReference(input), count > 0);
      assert.equal(hasMediaReference(output), false);
    });
  }
});

describe('hasMediaReference', () => {
  test('says true exactly when removeMediaReferences would replace something, call after call', () => {
    const piece = fc.oneof(
      fc.string(),
      fc.constantFrom(
        '[media attached: a.png]',
        '[MEDIA attached 3/4: b.jpg]',
        '[Image: source: /x.png]',
        '[image:SOURCE:y]',
        'media://inbound/z.png',
        'MEDIA://INBOUND/',
        '[media attached: unclosed\n',
        '[Image]',
        'media://outbound/q',
      ),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 6 }), (pieces) => {
        const text = pieces.join(' ');
        // Twice: a pattern that kept its position between calls would answer the second one wrong.
        for (let i = 0; i < 2; i++)
          assert.equal(hasMediaReference(text), removeMediaReferences(text).removed > 0);
      }),
      { numRuns: 500 },
    );
  });
});

describe('hasMediaReference, against the one pattern it stands for', () => {
  // The reference definition: the whole pattern the replacement uses, run over the text.
  const reference = new RegExp(MEDIA_REFERENCE_SOURCE, 'i');
  // Fragments that start, almost start or split a reference: brackets and '://' are where the
  // test looks, so texts crowded with them (and with near misses) are where it could go wrong.
  const fragment = fc.constantFrom(
    '[',
    ']',
    '\n',
    ' ',
    ':',
    '//',
    '://',
    'media',
    'MEDIA',
    'Media:',
    'media:/',
    'inbound/',
    'INBOUND/',
    'xmedia',
    '[media',
    '[media attached',
    ' attached',
    ' 12/3',
    '1/',
    '[Image',
    'image:',
    ' source:',
    'Source:',
    'a.png',
    '漢',
    '\u{1F600}',
  );
  test('says true exactly when the whole pattern finds a match, in texts crowded with near misses', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fragment, fc.string({ maxLength: 3 })), { maxLength: 24 }), (parts) => {
        const text = parts.join('');
        assert.equal(hasMediaReference(text), reference.test(text), JSON.stringify(text));
      }),
      { numRuns: 3000 },
    );
  });

  test('a reference anywhere in a long text is found; a bracket-heavy text without one is not', () => {
    const filler = 'x[1], y[2]: see http://example.com/a; '.repeat(2000);
    assert.equal(hasMediaReference(filler), false);
    for (const ref of ['[media attached: a.png]', '[image: source: b]', 'Media://Inbound/c']) {
      assert.equal(hasMediaReference(filler + ref), true, ref);
      assert.equal(hasMediaReference(ref + filler), true, ref);
    }
    // A reference right behind another bracket, or overlapping a near miss.
    assert.equal(hasMediaReference('[[media attached: a.png]'), true);
    assert.equal(hasMediaReference('[x[Image: source: y]'), true);
    assert.equal(hasMediaReference('[media attached [media attached: z]'), true);
    // At the very start a URI has no room before its '://' for anything but the scheme.
    assert.equal(hasMediaReference('media://inbound/'), true);
    assert.equal(hasMediaReference('edia://inbound/'), false);
  });
});
