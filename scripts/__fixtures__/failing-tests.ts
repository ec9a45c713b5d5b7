// A test file that fails on purpose, for scripts/test-files.test.ts (not named *.test.ts, so npm test
// does not run it).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';

test('passes', () => assert.ok(true));
test('fails at the top', () => assert.equal(1, 2));
describe('a suite', () => {
  test('fails inside a suite', () => {
    throw new Error('boom inside');
  });
  test('passes inside a suite', () => {});
});
