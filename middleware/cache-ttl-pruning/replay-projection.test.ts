import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig, type ConfigInput } from '../../config/config.ts';
import {
  WIRE_FORMATS,
  toolResultText,
  viewOf,
  wireBody,
  type ChatStep,
} from './__fixtures__/build-wire-chat.ts';
import { resolvePruningSettings, type PruningSettings } from './gate.ts';
import { unplaced } from './merge-projections.ts';
import { prunePass } from './prune-pass.ts';
import { applyProjection, replayProjection } from './replay-projection.ts';
import { softTrimNote } from './soft-trim.ts';
import { toolResultDigest } from './tool-result-digest.ts';

function settings(pruning: ConfigInput['pruning'] = {}): PruningSettings {
  return resolvePruningSettings(parseConfig({ pruning }).pruning, true, undefined);
}

function round(id: string, content: Extract<ChatStep, { kind: 'tool' }>['content']): ChatStep[] {
  return [
    { kind: 'assistant', calls: [{ id, name: 'read_file' }] },
    { kind: 'tool', id, content },
  ];
}

/** Old results a, b (with an image) and c, then two protected rounds. */
const steps: ChatStep[] = [
  { kind: 'user', text: 'go' },
  ...round('a', 'a'.repeat(30_000)),
  ...round('b', [{ text: 'b'.repeat(9000) }, { image: true }, { text: 'B'.repeat(9000) }]),
  ...round('c', 'c'.repeat(5000)),
  ...round('kept1', 'k'.repeat(5000)),
  ...round('kept2', 'k'.repeat(5000)),
  { kind: 'assistant', text: 'done' },
];

for (const format of WIRE_FORMATS) {
  describe(`replayProjection (${format})`, () => {
    const s = settings({ keepLastAssistants: 2, minPrunableToolChars: 0, hardClearRatio: 0.5 });

    test('gives later requests the exact bytes the pass produced', () => {
      const pruned = wireBody(format, steps);
      const result = prunePass(viewOf(format, pruned), s, 8000);
      assert.ok(result.soft > 0 && result.cleared > 0, 'the scenario exercises both actions');
      const later = wireBody(format, steps);
      assert.equal(replayProjection(viewOf(format, later), result.projection, s), result.projection.length);
      assert.equal(JSON.stringify(later), JSON.stringify(pruned));
    });

    test('two results with the same call id and text are left alone, so a second replay finds nothing', () => {
      // Found by the property test: an image-only result handed the same id twice. An entry names
      // its result by id and digest; once one of the two is pruned, a second replay found the other.
      const twice: ChatStep[] = [
        { kind: 'user', text: '' },
        ...round('call_0', [{ image: true }]),
        ...round('call_0', [{ image: true }]),
        ...round('call_1', 'x'.repeat(20_000)),
        { kind: 'assistant', text: 'done' },
      ];
      const clearAll = settings({
        keepLastAssistants: 1,
        minPrunableToolChars: 0,
        softTrimRatio: 0,
        hardClearRatio: 0,
      });
      const body = wireBody(format, twice);
      const { projection } = prunePass(viewOf(format, wireBody(format, twice)), clearAll, 50);
      assert.deepEqual(
        projection.map((e) => e.callId),
        ['call_1'],
        'only the result no other shares its id and text with',
      );
      assert.equal(replayProjection(viewOf(format, body), projection, clearAll), 1);
      const once = JSON.stringify(body);
      assert.equal(replayProjection(viewOf(format, body), projection, clearAll), 0);
      assert.equal(JSON.stringify(body), once);
    });

    test('is idempotent: a second replay changes nothing', () => {
      const body = wireBody(format, steps);
      const { projection } = prunePass(viewOf(format, wireBody(format, steps)), s, 8000);
      replayProjection(viewOf(format, body), projection, s);
      const once = JSON.stringify(body);
      assert.equal(replayProjection(viewOf(format, body), projection, s), 0);
      assert.equal(JSON.stringify(body), once);
    });

    test('leaves a result whose text no longer matches the digest alone', () => {
      const { projection } = prunePass(viewOf(format, wireBody(format, steps)), s, 8000);
      const edited = steps.map((step) =>
        step.kind === 'tool' && step.id === 'a' ? { ...step, content: 'A'.repeat(30_000) } : step,
      );
      const body = wireBody(format, edited);
      const view = viewOf(format, body);
      const applied = applyProjection(view, projection, s);
      assert.ok(!applied.some((e) => e.callId === 'a'));
      assert.equal(applied.length, projection.length - 1);
      assert.equal(toolResultText(viewOf(format, body), 'a'), 'A'.repeat(30_000));
    });

    test('an empty projection changes nothing', () => {
      const body = wireBody(format, steps);
      const before = JSON.stringify(body);
      assert.equal(replayProjection(viewOf(format, body), [], s), 0);
      assert.equal(JSON.stringify(body), before);
    });

    test('a new pass on top of a replayed soft trim clears it with the digest of the original text', () => {
      // First pass: soft trim only.
      const soft = settings({ keepLastAssistants: 2, hardClear: { enabled: false } });
      const first = prunePass(viewOf(format, wireBody(format, steps)), soft, 12_000);
      assert.ok(first.projection.every((e) => e.action === 'soft'));
      const originalDigest = toolResultDigest(viewOf(format, wireBody(format, steps)).toolResults()[0]!);
      assert.deepEqual(first.projection[0], { callId: 'a', action: 'soft', digest: originalDigest });

      // Later request: replay, then a pass that may clear.
      const clear = settings({ keepLastAssistants: 2, minPrunableToolChars: 0 });
      const body = wireBody(format, steps);
      const view = viewOf(format, body);
      const replayed = applyProjection(view, first.projection, clear);
      assert.deepEqual(unplaced(replayed), first.projection);
      assert.ok(toolResultText(view, 'a').endsWith(softTrimNote(1500, 1500, 30_000)));
      const second = prunePass(view, clear, 5000, replayed);
      assert.equal(second.soft, 0, 'replayed results are not trimmed again');
      const entryA = second.projection.find((e) => e.callId === 'a');
      assert.deepEqual(entryA, { callId: 'a', action: 'cleared', digest: originalDigest });
      for (const entry of first.projection) {
        assert.equal(second.projection.find((e) => e.callId === entry.callId)?.digest, entry.digest);
      }

      // The request after that replays the cumulative projection onto the original content.
      const third = wireBody(format, steps);
      assert.equal(
        replayProjection(viewOf(format, third), second.projection, clear),
        second.projection.length,
      );
      assert.equal(JSON.stringify(third), JSON.stringify(body));
    });

    test('a pass without anything new to do keeps the replayed projection and reports no change', () => {
      const { projection } = prunePass(viewOf(format, wireBody(format, steps)), s, 8000);
      const body = wireBody(format, steps);
      const view = viewOf(format, body);
      const replayed = applyProjection(view, projection, s);
      const again = prunePass(view, s, 8000, replayed);
      assert.equal(again.changed, false);
      assert.deepEqual(again.projection, projection);
    });

    test('a call id handed out again: the entry finds its result by digest, and the new one stays whole', () => {
      const s1 = settings({ keepLastAssistants: 1, hardClear: { enabled: false } });
      const first: ChatStep[] = [
        { kind: 'user', text: 'go' },
        ...round('call_0', 'old '.repeat(3000)),
        ...round('call_1', 'one '.repeat(3000)),
        { kind: 'assistant', text: 'done' },
      ];
      const pass = prunePass(viewOf(format, wireBody(format, first)), s1, 4000);
      assert.deepEqual(
        pass.projection.map((e) => [e.callId, e.action]),
        [
          ['call_0', 'soft'],
          ['call_1', 'soft'],
        ],
      );
      const later: ChatStep[] = [
        ...first,
        { kind: 'user', text: 'again' },
        ...round('call_0', 'new '.repeat(3000)),
      ];
      const body = wireBody(format, later);
      const applied = applyProjection(viewOf(format, body), pass.projection, s1);
      assert.deepEqual(
        applied.map((e) => [e.callId, e.resultIndex]),
        [
          ['call_0', 0],
          ['call_1', 1],
        ],
      );
      const results = viewOf(format, body).toolResults();
      assert.ok(
        results[0]!.texts[0]!.text.endsWith(softTrimNote(1500, 1500, 12_000)),
        'the old result stays pruned',
      );
      assert.equal(results[2]!.texts[0]!.text, 'new '.repeat(3000), 'the new result with that id untouched');
    });

    test('entries naming the same call id and text go to those results oldest first, one each', () => {
      const dup: ChatStep[] = [
        { kind: 'user', text: 'go' },
        ...round('x', 'x'.repeat(9000)),
        ...round('x', 'x'.repeat(9000)),
        ...round('x', 'x'.repeat(9000)),
      ];
      const digest = toolResultDigest(viewOf(format, wireBody(format, dup)).toolResults()[0]!);
      const body = wireBody(format, dup);
      const applied = applyProjection(
        viewOf(format, body),
        [
          { callId: 'x', action: 'cleared', digest },
          { callId: 'x', action: 'soft', digest },
        ],
        s,
      );
      assert.deepEqual(
        applied.map((e) => [e.action, e.resultIndex]),
        [
          ['cleared', 0],
          ['soft', 1],
        ],
      );
      const texts = viewOf(format, body)
        .toolResults()
        .map((r) => r.texts.map((t) => t.text).join(''));
      assert.equal(texts[0], s.hardClear.placeholder);
      assert.ok(texts[1]!.endsWith(softTrimNote(1500, 1500, 9000)));
      assert.equal(texts[2], 'x'.repeat(9000));
    });
  });
}
