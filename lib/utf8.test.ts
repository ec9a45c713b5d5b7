/**
 * decodeUtf8 must give exactly what `toString('utf8')` gives for any bytes, small and large (the
 * ASCII road is Latin-1; everything else, invalid UTF-8 included, is the UTF-8 decoder).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeUtf8 } from './utf8.ts';

const LARGE = 1_100_000; // over Node's external-string size (EXTERN_APEX)

/** `bytes` after enough ASCII to take the body past a megabyte, and once more before it. */
function large(bytes: Uint8Array): Buffer[] {
  const pad = Buffer.alloc(LARGE, 'a');
  return [Buffer.concat([pad, bytes]), Buffer.concat([bytes, pad])];
}

const same = (buf: Buffer) => assert.equal(decodeUtf8(buf), buf.toString('utf8'));

test('any bytes decode as toString("utf8") decodes them', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => same(Buffer.from(bytes))),
    { numRuns: 500 },
  );
});

test('the UTF-8 bytes of any text (lone surrogates become U+FFFD) decode alike', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => same(Buffer.from(text, 'utf8'))),
    { numRuns: 500 },
  );
});

test('ASCII bodies over a megabyte (the Latin-1 road) decode alike', () => {
  fc.assert(
    fc.property(fc.uint8Array({ max: 0x7f, maxLength: 300 }), (bytes) => {
      for (const buf of large(bytes)) same(buf);
    }),
    { numRuns: 20 },
  );
});

test('the hard cases of UTF-8 decode alike in large bodies', () => {
  const cases: Array<[string, number[]]> = [
    ['byte order mark', [0xef, 0xbb, 0xbf]],
    ['overlong slash', [0xc0, 0xaf]],
    ['encoded surrogate', [0xed, 0xa0, 0x80]],
    ['past U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ['truncated emoji', [0xf0, 0x9f, 0x98]],
    ['lone continuation bytes', [0x80, 0xbf]],
    ['emoji and accents', [...Buffer.from('zażółć 😀 ü')]],
    ['NUL', [0x00]],
  ];
  for (const [name, bytes] of cases) {
    for (const buf of large(Uint8Array.from(bytes))) {
      assert.equal(decodeUtf8(buf), buf.toString('utf8'), name);
    }
  }
  // A JSON body with non-ASCII text parses the same either way.
  const body = Buffer.from(JSON.stringify({ messages: [{ content: 'x'.repeat(LARGE) + ' café 😀' }] }));
  assert.deepEqual(JSON.parse(decodeUtf8(body)), JSON.parse(body.toString('utf8')));
});
