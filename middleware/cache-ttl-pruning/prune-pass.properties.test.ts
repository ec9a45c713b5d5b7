/**
 * Property tests of the pruning pass and its replay over random chats in both wire formats.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ALL_WIRE_FORMATS,
  WIRE_FORMATS,
  viewOf,
  wireBody,
  type ChatStep,
  type ToolPart,
  type WireFormat,
} from './__fixtures__/build-wire-chat.ts';
import { IMAGE_PRUNED_TEXT } from './edit-tool-result.ts';
import { estimateChars } from './estimate.ts';
import type { PruningSettings } from './gate.ts';
import { unplaced } from './merge-projections.ts';
import { placedPrunableToolResults } from './prunable-range.ts';
import { prunePass } from './prune-pass.ts';
import { applyProjection, replayProjection } from './replay-projection.ts';
import { toolResultDigest } from './tool-result-digest.ts';
import { toolNameAllowed } from './tool-name-filter.ts';

type Obj = Record<string, unknown>;

const text = fc
  .array(fc.constantFrom('a', 'Z', ' ', '\n', '漢', 'か', '한', '😀', 'é', '{'), {
    minLength: 1,
    maxLength: 30,
  })
  .chain((units) => fc.integer({ min: 0, max: 60 }).map((k) => units.join('').repeat(k)));
const part: fc.Arbitrary<ToolPart> = fc.oneof(
  { weight: 5, arbitrary: text.map((t) => ({ text: t })) },
  { weight: 1, arbitrary: fc.constant({ image: true as const }) },
);
const content = fc.oneof(text, fc.array(part, { maxLength: 4 }));
const turn = fc.record({
  user: fc.option(text, { nil: undefined }),
  say: fc.option(text, { nil: undefined }),
  calls: fc.array(
    fc.record({ name: fc.constantFrom('read_file', 'Exec', 'grep', 'mcp__fs__read'), content }),
    { maxLength: 3 },
  ),
});

/**
 * A random agent chat: optional bootstrap reads, then turns of user text, calls and results. With
 * `reuse`, call ids restart in every turn, as some OpenAI-compatible servers hand them out, so one
 * id names several results (sometimes with the same text).
 */
const chat: fc.Arbitrary<ChatStep[]> = fc
  .record({
    boot: fc.array(content, { maxLength: 2 }),
    turns: fc.array(turn, { maxLength: 7 }),
    final: fc.boolean(),
    reuse: fc.boolean(),
  })
  .map(({ boot, turns, final, reuse }) => {
    const steps: ChatStep[] = [];
    boot.forEach((c, i) => {
      steps.push({ kind: 'assistant', calls: [{ id: `boot${i}`, name: 'read_file' }] });
      steps.push({ kind: 'tool', id: `boot${i}`, content: c });
    });
    turns.forEach((t, i) => {
      if (t.user !== undefined) steps.push({ kind: 'user', text: t.user });
      const id = (j: number) => (reuse ? `call_${j}` : `c${i}_${j}`);
      const calls = t.calls.map((c, j) => ({ id: id(j), name: c.name }));
      steps.push({ kind: 'assistant', ...(t.say !== undefined ? { text: t.say } : {}), calls });
      t.calls.forEach((c, j) => steps.push({ kind: 'tool', id: id(j), content: c.content }));
    });
    if (final) steps.push({ kind: 'assistant', text: 'done' });
    return steps;
  });

/** Settings that may differ between passes; the trim shapes (softTrim, hardClear) are shared. */
const thresholds: fc.Arbitrary<Thresholds> = fc.record({
  keepLastAssistants: fc.nat(4),
  softTrimRatio: fc.double({ min: 0, max: 0.6, noNaN: true }),
  hardClearRatio: fc.double({ min: 0, max: 1, noNaN: true }),
  minPrunableToolChars: fc.nat(3000),
  tools: fc.record({
    allow: fc.constantFrom<string[]>([], ['read*'], ['*'], ['GREP']),
    deny: fc.constantFrom<string[]>([], ['exec'], ['*'], ['mcp__*']),
  }),
});
const shapes: fc.Arbitrary<Shapes> = fc.record({
  softTrim: fc.record({ maxChars: fc.nat(400), headChars: fc.nat(150), tailChars: fc.nat(150) }),
  hardClear: fc.record({
    enabled: fc.boolean(),
    placeholder: fc.constantFrom('[Old tool result content cleared]', '', '[cleared 漢字]'),
  }),
});
const window = fc.integer({ min: 50, max: 8000 });

type Thresholds = Omit<PruningSettings, 'mode' | 'ttlMs' | 'softTrim' | 'hardClear'>;
type Shapes = Pick<PruningSettings, 'softTrim' | 'hardClear'>;

function settingsOf(t: Thresholds, s: Shapes): PruningSettings {
  return { mode: 'cache-ttl', ttlMs: 300_000, ...t, ...s };
}

/** The body with every tool result's content removed: what pruning must never change. */
function withoutToolResultContent(format: WireFormat, body: Obj): string {
  const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
  const stripped = messages.map((m) => {
    const message = m as Obj;
    if (format === 'openai')
      return message.role === 'tool' ? { role: 'tool', id: message.tool_call_id } : message;
    if (!Array.isArray(message.content)) return message;
    return {
      ...message,
      content: (message.content as Obj[]).map((b) => (b.type === 'tool_result' ? { id: b.tool_use_id } : b)),
    };
  });
  return JSON.stringify({ ...body, messages: stripped });
}

function resultShapes(format: WireFormat, body: Obj) {
  return viewOf(format, body)
    .toolResults()
    .map((r) => ({ callId: r.callId, messageIndex: r.messageIndex, isError: r.isError }));
}

function roles(format: WireFormat, body: Obj) {
  return viewOf(format, body)
    .messages()
    .map((m) => [m.index, m.role]);
}

const runs = { numRuns: 150 };

for (const format of WIRE_FORMATS) {
  describe(`prunePass properties (${format})`, () => {
    test('replaying the projection gives the pass output byte for byte, and replay is idempotent', () => {
      const seen = { soft: 0, cleared: 0, images: 0 };
      fc.assert(
        fc.property(chat, thresholds, shapes, window, (steps, t, sh, w) => {
          const s = settingsOf(t, sh);
          const pruned = wireBody(format, steps);
          const result = prunePass(viewOf(format, pruned), s, w);
          if (result.soft > 0) seen.soft += 1;
          if (result.cleared > 0) seen.cleared += 1;
          if (JSON.stringify(pruned).includes(IMAGE_PRUNED_TEXT)) seen.images += 1;
          const later = wireBody(format, steps);
          assert.equal(
            replayProjection(viewOf(format, later), result.projection, s),
            result.projection.length,
          );
          assert.equal(JSON.stringify(later), JSON.stringify(pruned));
          assert.equal(replayProjection(viewOf(format, later), result.projection, s), 0);
          assert.equal(JSON.stringify(later), JSON.stringify(pruned));
        }),
        runs,
      );
      // The generated chats do exercise both actions and image replacement.
      assert.ok(seen.soft > 0 && seen.cleared > 0 && seen.images > 0, JSON.stringify(seen));
    });

    test('touches only prunable tool results; other messages stay byte-identical', () => {
      fc.assert(
        fc.property(chat, thresholds, shapes, window, (steps, t, sh, w) => {
          const s = settingsOf(t, sh);
          const original = wireBody(format, steps);
          const body = wireBody(format, steps);
          const view = viewOf(format, body);
          const prunable = new Set(placedPrunableToolResults(view, s).map((r) => r.index));
          const result = prunePass(view, s, w);
          assert.equal(withoutToolResultContent(format, body), withoutToolResultContent(format, original));
          const before = viewOf(format, original).toolResults();
          const after = viewOf(format, body).toolResults();
          after.forEach((ref, i) => {
            const same =
              JSON.stringify(ref.texts.map((x) => x.text)) ===
                JSON.stringify(before[i]?.texts.map((x) => x.text)) &&
              ref.images.length === before[i]?.images.length;
            if (!same) assert.ok(prunable.has(i), `result ${i} (${ref.callId}) was not prunable`);
          });
          // Every projection entry names a changed result, by call id and its original digest.
          const changed = after.flatMap((ref, i) =>
            JSON.stringify(ref.texts.map((x) => x.text)) ===
              JSON.stringify(before[i]?.texts.map((x) => x.text)) &&
            ref.images.length === before[i]?.images.length
              ? []
              : [`${before[i]!.callId} ${toolResultDigest(before[i]!)}`],
          );
          assert.deepEqual(
            result.projection.map((e) => `${e.callId} ${e.digest}`),
            changed,
          );
        }),
        runs,
      );
    });

    test('never increases the size; keeps message count, order, roles and call ids; reports honestly', () => {
      fc.assert(
        fc.property(chat, thresholds, shapes, window, (steps, t, sh, w) => {
          const s = settingsOf(t, sh);
          const original = wireBody(format, steps);
          const body = wireBody(format, steps);
          const view = viewOf(format, body);
          const charsBefore = estimateChars(view);
          const result = prunePass(view, s, w);
          const charsAfter = estimateChars(viewOf(format, body));
          assert.ok(charsAfter <= charsBefore);
          assert.ok(result.estimateAfter <= result.estimateBefore);
          assert.equal(result.charsRemoved, charsBefore - charsAfter);
          assert.equal((body.messages as unknown[]).length, (original.messages as unknown[]).length);
          assert.deepEqual(roles(format, body), roles(format, original));
          assert.deepEqual(resultShapes(format, body), resultShapes(format, original));
          assert.equal(result.changed, JSON.stringify(body) !== JSON.stringify(original));
          assert.equal(result.soft + result.cleared, result.projection.length);
        }),
        runs,
      );
    });

    test('a pass on top of a replayed projection records a projection that replays to its output', () => {
      fc.assert(
        fc.property(chat, thresholds, thresholds, shapes, window, window, (steps, t1, t2, sh, w1, w2) => {
          const s1 = settingsOf(t1, sh);
          const s2 = settingsOf(t2, sh);
          const first = prunePass(viewOf(format, wireBody(format, steps)), s1, w1);
          const body = wireBody(format, steps);
          const view = viewOf(format, body);
          const replayed = applyProjection(view, first.projection, s2);
          assert.deepEqual(unplaced(replayed), first.projection);
          const second = prunePass(view, s2, w2, replayed);
          // The replayed entries come first, each keeping the call id and digest of the original text.
          assert.deepEqual(
            second.projection.slice(0, first.projection.length).map((e) => [e.callId, e.digest]),
            first.projection.map((e) => [e.callId, e.digest]),
          );
          const fresh = wireBody(format, steps);
          replayProjection(viewOf(format, fresh), second.projection, s2);
          assert.equal(JSON.stringify(fresh), JSON.stringify(body));
        }),
        runs,
      );
    });

    test('as the chat grows (call ids handed out again included), replay keeps the pruned prefix byte for byte', () => {
      const seen = { reusedAndPruned: 0 };
      fc.assert(
        fc.property(
          chat,
          fc.nat(),
          thresholds,
          thresholds,
          shapes,
          window,
          window,
          (steps, at, t1, t2, sh, w1, w2) => {
            // Split where a new message starts, so the earlier part is a request the client sent.
            const starts = steps.flatMap((step, i) => (step.kind === 'tool' ? [] : [i]));
            const k = starts.length > 0 ? starts[at % starts.length]! : steps.length;
            const earlier = steps.slice(0, k);
            const s1 = settingsOf(t1, sh);
            const s2 = settingsOf(t2, sh);
            const passed = wireBody(format, earlier);
            const first = prunePass(viewOf(format, passed), s1, w1);
            const body = wireBody(format, steps);
            const view = viewOf(format, body);
            const replayed = applyProjection(view, first.projection, s2);
            assert.deepEqual(unplaced(replayed), first.projection);
            const sent = (b: Obj) =>
              (b.messages as unknown[]).slice(0, (passed.messages as unknown[]).length);
            assert.equal(JSON.stringify(sent(body)), JSON.stringify(passed.messages));
            const ids = viewOf(format, body)
              .toolResults()
              .map((r) => r.callId);
            if (first.projection.some((e) => ids.filter((id) => id === e.callId).length > 1))
              seen.reusedAndPruned += 1;
            // A later pass on the grown chat records a projection that replays to its output.
            const second = prunePass(view, s2, w2, replayed);
            const fresh = wireBody(format, steps);
            replayProjection(viewOf(format, fresh), second.projection, s2);
            assert.equal(JSON.stringify(fresh), JSON.stringify(body));
          },
        ),
        runs,
      );
      assert.ok(seen.reusedAndPruned > 0, 'pruned results whose call id comes back later are generated');
    });
  });
}

/**
 * Each tool result of `steps`, in order, with the tool of the call it answers: the latest call with
 * its id so far, as the client ran them.
 */
function answered(steps: readonly ChatStep[]): Array<[string, string | undefined]> {
  const byId = new Map<string, string>();
  const out: Array<[string, string | undefined]> = [];
  for (const step of steps) {
    if (step.kind === 'assistant') for (const call of step.calls ?? []) byId.set(call.id, call.name);
    else if (step.kind === 'tool') out.push([step.id, byId.get(step.id)]);
  }
  return out;
}

const namedResults = (view: ReturnType<typeof viewOf>) =>
  view.toolResults().map((r): [string, string | undefined] => [r.callId, r.toolName]);

for (const format of ALL_WIRE_FORMATS) {
  describe(`a tool result and the call it answers (${format})`, () => {
    test('each result keeps its call id and order and is named by the call before it with its id; reading twice reads the same', () => {
      const seen = { renamedLater: 0 };
      fc.assert(
        fc.property(chat, (steps) => {
          const body = wireBody(format, steps);
          const before = JSON.stringify(body);
          const expected = answered(steps);
          assert.deepEqual(namedResults(viewOf(format, body)), expected);
          assert.deepEqual(namedResults(viewOf(format, body)), expected);
          assert.equal(JSON.stringify(body), before);
          const last = new Map(
            steps.flatMap((s) => (s.kind === 'assistant' ? (s.calls ?? []).map((c) => [c.id, c.name]) : [])),
          );
          if (expected.some(([id, name]) => last.get(id) !== name)) seen.renamedLater += 1;
        }),
        runs,
      );
      assert.ok(seen.renamedLater > 0, 'ids a later call gives another tool are generated');
    });

    test('a pass changes only results whose own call names an allowed tool, and keeps every id, order and name', () => {
      fc.assert(
        fc.property(chat, thresholds, shapes, window, (steps, t, sh, w) => {
          const s = settingsOf(t, sh);
          const original = wireBody(format, steps);
          const body = wireBody(format, steps);
          prunePass(viewOf(format, body), s, w);
          const expected = answered(steps);
          const before = viewOf(format, original).toolResults();
          viewOf(format, body)
            .toolResults()
            .forEach((ref, i) => {
              const same =
                JSON.stringify(ref.texts.map((x) => x.text)) ===
                  JSON.stringify(before[i]?.texts.map((x) => x.text)) &&
                ref.images.length === before[i]?.images.length;
              const tool = expected[i]?.[1];
              if (!same) assert.ok(toolNameAllowed(tool, s.tools), `result ${i} of ${tool} was pruned`);
            });
          assert.deepEqual(namedResults(viewOf(format, body)), namedResults(viewOf(format, original)));
        }),
        runs,
      );
    });
  });
}
