/**
 * The log viewer's figure for what a tool-result trim removed (SPEC section 12) is what the trim
 * really took out of what the model received: the original less the kept head, the marker, the tail
 * and the stand-in of every part wholly inside the cut, as the trim itself lays the parts out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cutParts, partCounts } from '../../middleware/tool-result-trimming/cut-parts.ts';
import { countCodePoints } from '../../lib/code-points.ts';

// The viewer's plain JS module (typed by its own tsconfig, not this one's).
const viewerModule = '../../ui/turn-figures.js';
const { trimRemovedChars } = (await import(viewerModule)) as { trimRemovedChars: (e: object) => number };

const digest = (text: string) => createHash('sha256').update(text).digest('hex');

/** What cutting `texts` really removed, and the viewer's figure from the logged event. */
function both(texts: string[], headChars: number, tailChars: number): [number, number] {
  const counts = partCounts(texts);
  const original = counts.reduce((a, b) => a + b, 0);
  const kept = cutParts(texts, counts, headChars, tailChars).reduce((n, t) => n + countCodePoints(t), 0);
  const event = {
    seq: 1,
    at: 0,
    type: 'tool-result-trimmed',
    originalChars: original,
    headChars,
    tailChars,
    ...(texts.length > 1 && { parts: texts.map((t, i) => ({ chars: counts[i]!, digest: digest(t) })) }),
  };
  return [original - kept, trimRemovedChars(event)];
}

test('one text: the original less head, marker and tail', () => {
  const [real, shown] = both(['x'.repeat(40_000)], 4096, 1024);
  assert.equal(shown, real);
  assert.equal(shown, 40_000 - 4096 - 1024 - countCodePoints('\n\n[... tool result middle pruned ...]\n\n'));
});

test('several parts: the parts wholly inside the cut keep a stand-in, counted as kept', () => {
  const layouts: Array<[string[], number, number]> = [
    [['a'.repeat(3000), 'b'.repeat(3000), 'c'.repeat(3000), 'd'.repeat(3000)], 2000, 1000],
    [['a'.repeat(2000), 'b'.repeat(5000), 'c'.repeat(1000)], 2000, 1000],
    [['a'.repeat(1999), 'b'.repeat(5000), 'c'.repeat(1001)], 2000, 1000],
    [['é'.repeat(500), '😀'.repeat(9000), 'z'.repeat(300)], 400, 200],
    [['a'.repeat(100), 'b'.repeat(100), 'c'.repeat(100), 'd'.repeat(100), 'e'.repeat(100)], 50, 50],
  ];
  for (const [texts, head, tail] of layouts) {
    const [real, shown] = both(texts, head, tail);
    assert.equal(shown, real, `${texts.map((t) => countCodePoints(t)).join('+')} head ${head} tail ${tail}`);
  }
});
