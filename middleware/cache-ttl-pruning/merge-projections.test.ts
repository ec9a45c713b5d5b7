import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mergeProjections } from './merge-projections.ts';
import type { PruningProjectionEntry } from './projection-entry.ts';

const d = (c: string) => c.repeat(64);

describe('mergeProjections', () => {
  test('cumulative: entries of both, earlier ones first', () => {
    const prev: PruningProjectionEntry[] = [{ callId: 'a', action: 'soft', digest: d('a') }];
    const next: PruningProjectionEntry[] = [{ callId: 'b', action: 'cleared', digest: d('b') }];
    assert.deepEqual(mergeProjections(prev, next), [...prev, ...next]);
  });

  test('a later cleared supersedes soft and keeps the digest of the original text', () => {
    const merged = mergeProjections(
      [{ callId: 'a', action: 'soft', digest: d('1') }],
      [{ callId: 'a', action: 'cleared', digest: d('2') }],
    );
    assert.deepEqual(merged, [{ callId: 'a', action: 'cleared', digest: d('1') }]);
  });

  test('a cleared result is never turned back into soft', () => {
    const merged = mergeProjections(
      [{ callId: 'a', action: 'cleared', digest: d('1') }],
      [{ callId: 'a', action: 'soft', digest: d('2') }],
    );
    assert.deepEqual(merged, [{ callId: 'a', action: 'cleared', digest: d('1') }]);
  });

  test('property: one entry per call id, associative, and idempotent', () => {
    const entry = fc.record({
      callId: fc.constantFrom('a', 'b', 'c', 'd'),
      action: fc.constantFrom('soft' as const, 'cleared' as const),
      digest: fc.constantFrom(d('1'), d('2'), d('3')),
    });
    fc.assert(
      fc.property(fc.array(entry), fc.array(entry), fc.array(entry), (x, y, z) => {
        const xy = mergeProjections(x, y);
        assert.equal(new Set(xy.map((e) => e.callId)).size, xy.length);
        assert.deepEqual(
          mergeProjections(mergeProjections(x, y), z),
          mergeProjections(x, mergeProjections(y, z)),
        );
        assert.deepEqual(mergeProjections(xy, xy), xy);
        for (const e of xy) {
          const first = [...x, ...y].find((f) => f.callId === e.callId);
          assert.equal(e.digest, first?.digest);
          const anyCleared = [...x, ...y].some((f) => f.callId === e.callId && f.action === 'cleared');
          assert.equal(e.action, anyCleared ? 'cleared' : 'soft');
        }
      }),
    );
  });
});
