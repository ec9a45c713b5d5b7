import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { mergeProjections, unplaced, type PlacedProjectionEntry } from './merge-projections.ts';

const d = (c: string) => c.repeat(64);

describe('mergeProjections', () => {
  test('cumulative: entries of both, earlier ones first', () => {
    const prev: PlacedProjectionEntry[] = [{ callId: 'a', action: 'soft', digest: d('a'), resultIndex: 0 }];
    const next: PlacedProjectionEntry[] = [
      { callId: 'b', action: 'cleared', digest: d('b'), resultIndex: 1 },
    ];
    assert.deepEqual(mergeProjections(prev, next), [...prev, ...next]);
  });

  test('a later cleared supersedes soft and keeps the digest of the original text', () => {
    const merged = mergeProjections(
      [{ callId: 'a', action: 'soft', digest: d('1'), resultIndex: 0 }],
      [{ callId: 'a', action: 'cleared', digest: d('2'), resultIndex: 0 }],
    );
    assert.deepEqual(unplaced(merged), [{ callId: 'a', action: 'cleared', digest: d('1') }]);
  });

  test('a cleared result is never turned back into soft', () => {
    const merged = mergeProjections(
      [{ callId: 'a', action: 'cleared', digest: d('1'), resultIndex: 0 }],
      [{ callId: 'a', action: 'soft', digest: d('2'), resultIndex: 0 }],
    );
    assert.deepEqual(unplaced(merged), [{ callId: 'a', action: 'cleared', digest: d('1') }]);
  });

  test('two results sharing a call id keep an entry each', () => {
    const merged = mergeProjections(
      [{ callId: 'a', action: 'soft', digest: d('1'), resultIndex: 0 }],
      [{ callId: 'a', action: 'cleared', digest: d('2'), resultIndex: 3 }],
    );
    assert.deepEqual(unplaced(merged), [
      { callId: 'a', action: 'soft', digest: d('1') },
      { callId: 'a', action: 'cleared', digest: d('2') },
    ]);
  });

  test('property: one entry per result, associative, and idempotent', () => {
    const entry = fc.record({
      callId: fc.constantFrom('a', 'b', 'c', 'd'),
      action: fc.constantFrom('soft' as const, 'cleared' as const),
      digest: fc.constantFrom(d('1'), d('2'), d('3')),
      resultIndex: fc.nat(5),
    });
    fc.assert(
      fc.property(fc.array(entry), fc.array(entry), fc.array(entry), (x, y, z) => {
        const xy = mergeProjections(x, y);
        assert.equal(new Set(xy.map((e) => e.resultIndex)).size, xy.length);
        assert.deepEqual(
          mergeProjections(mergeProjections(x, y), z),
          mergeProjections(x, mergeProjections(y, z)),
        );
        assert.deepEqual(mergeProjections(xy, xy), xy);
        for (const e of xy) {
          const first = [...x, ...y].find((f) => f.resultIndex === e.resultIndex);
          assert.equal(e.digest, first?.digest);
          assert.equal(e.callId, first?.callId);
          const anyCleared = [...x, ...y].some(
            (f) => f.resultIndex === e.resultIndex && f.action === 'cleared',
          );
          assert.equal(e.action, anyCleared ? 'cleared' : 'soft');
        }
      }),
    );
  });
});
