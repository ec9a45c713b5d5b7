/**
 * sha256Hex names chats, branches, tools, images and message digests kept in the log: its output
 * must stay what it has always been, the hex SHA-256 of the bytes or of the string's UTF-8 (a lone
 * surrogate as U+FFFD, as Buffer.from writes it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { sha256Hex } from './sha256.ts';

const reference = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex');

test('known digests', () => {
  assert.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(sha256Hex(Buffer.from('abc')), sha256Hex('abc'));
  // A lone surrogate is hashed as the UTF-8 of U+FFFD.
  assert.equal(sha256Hex('a\ud800b'), sha256Hex('a\ufffdb'));
});

test('the same digest as a Hash object, for any string and its bytes', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => {
      assert.equal(sha256Hex(s), reference(s));
      const bytes = Buffer.from(s);
      assert.equal(sha256Hex(bytes), reference(bytes));
      assert.equal(sha256Hex(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length)), reference(bytes));
    }),
    { numRuns: 500 },
  );
  // Code units that are no code point on their own (lone surrogates) too.
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 50 }), (units) => {
      const s = String.fromCharCode(...units);
      assert.equal(sha256Hex(s), reference(s));
    }),
    { numRuns: 500 },
  );
});
