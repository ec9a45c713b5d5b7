import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalJson, canonicalJsonByReplacer } from './canonical-json.ts';

test('the quick writer gives exactly the reference text for any JSON value', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 5 }), (value) => {
      assert.equal(canonicalJson(value), canonicalJsonByReplacer(value));
    }),
    { numRuns: 1000 },
  );
});

test('objects of any width sort as the reference sorts them, small (in place) and wide alike', () => {
  // Keys from a few characters, so neighbours share prefixes; array-index keys among them.
  const key = fc.oneof(
    fc.string({ unit: fc.constantFrom('a', 'b', 'B', '_', 'é', '\u{1F600}'), maxLength: 4 }),
    fc.nat({ max: 40 }).map(String),
  );
  fc.assert(
    fc.property(
      fc.oneof(
        fc.dictionary(key, fc.jsonValue({ maxDepth: 1 }), { maxKeys: 16 }),
        fc.dictionary(key, fc.jsonValue({ maxDepth: 1 }), { minKeys: 17, maxKeys: 40 }),
      ),
      (value) => {
        assert.equal(canonicalJson(value), canonicalJsonByReplacer(value));
      },
    ),
    { numRuns: 500 },
  );
});

test('the quick writer gives exactly the reference text for values JSON does not keep as they are', () => {
  fc.assert(
    fc.property(
      fc.anything({
        maxDepth: 4,
        withBoxedValues: true,
        withDate: true,
        withMap: true,
        withSet: true,
        withNullPrototype: true,
        withObjectString: true,
        withSparseArray: true,
        withTypedArray: true,
      }),
      (value) => {
        assert.equal(canonicalJson(value), canonicalJsonByReplacer(value));
      },
    ),
    { numRuns: 1000 },
  );
});

test('keys sort as the reference sorts them, "__proto__" stays a member, undefined and functions are left out', () => {
  const parsed: unknown = JSON.parse('{"b":1,"a":{"__proto__":2,"10":3,"9":4},"é":[null,-0,1e21]}');
  const value = { ...(parsed as object), u: undefined, f: () => 1, arr: [undefined, () => 1] };
  // Array-index keys come first in numeric order, as in the reference's sorted copy (an object).
  const text = '{"a":{"9":4,"10":3,"__proto__":2},"arr":[null,null],"b":1,"é":[null,0,1e+21]}';
  assert.equal(canonicalJson(value), text);
  assert.equal(canonicalJsonByReplacer(value), text);
  assert.equal(canonicalJson(undefined), undefined);
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  // A cycle overflows the stack in the reference too.
  assert.throws(() => canonicalJsonByReplacer(cycle), RangeError);
  assert.throws(() => canonicalJson(cycle), RangeError);
});
