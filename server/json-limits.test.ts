import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exceededJsonLimit } from './json-limits.ts';

const check = (text: string, maxDepth = 3, maxValues = 10) =>
  exceededJsonLimit(Buffer.from(text, 'utf8'), { maxDepth, maxValues });

test('depth counts arrays and objects, not brackets inside strings or after escapes', () => {
  assert.equal(check('[[[1]]]'), undefined);
  assert.equal(check('[[[[1]]]]'), 'depth');
  assert.equal(check('{"a":{"b":{"c":1}}}'), undefined);
  assert.equal(check('{"a":{"b":{"c":{}}}}'), 'depth');
  assert.equal(check('["[[[[[[", "{{{{{{"]'), undefined);
  assert.equal(check('["\\"[[[[[[", "\\\\", "]]]]"]'), undefined);
  assert.equal(check('[[],[],[],[]]'), undefined, 'siblings do not add up');
  assert.equal(check('['.repeat(100_000), 256, 1_000_000), 'depth', 'unterminated nesting stops early');
  assert.equal(
    check('["a\\\\", [[[[1]]]]]'),
    'depth',
    'an even run of backslashes does not escape the quote',
  );
  assert.equal(check(String.raw`["a\"[[[[", 1]`), undefined, 'an odd run does');
});

test('values count containers and separators', () => {
  assert.equal(check('[1,2,3,4,5,6,7,8,9]'), undefined);
  assert.equal(check('[1,2,3,4,5,6,7,8,9,10,11,12]'), 'values');
  assert.equal(check('{"a":"x,y,z,w,v,u,t,s,r,q,p,o"}'), undefined, 'commas in strings are text');
  assert.equal(check('[{},{},{},{},{},{}]'), 'values');
});

test('malformed text is left to JSON.parse', () => {
  assert.equal(check(']]]]]'), undefined);
  assert.equal(check('"unterminated'), undefined);
  assert.equal(check('not json at all'), undefined);
});

test('scanning 50 MB takes well under a second', () => {
  const big = Buffer.from(
    JSON.stringify({ text: 'x'.repeat(25_000_000), list: Array.from({ length: 2_000_000 }, () => 1) }),
  );
  const started = performance.now();
  assert.equal(exceededJsonLimit(big, { maxDepth: 256, maxValues: 10_000_000 }), undefined);
  assert.ok(performance.now() - started < 1000, `${Math.round(performance.now() - started)} ms`);
});
