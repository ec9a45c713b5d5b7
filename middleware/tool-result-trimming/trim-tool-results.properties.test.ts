/**
 * Properties of trimming over generated tool results of every wire format (text parts, images and
 * structured parts in any order): the cut matches a reference written over arrays of code points,
 * never grows a result, never leaves an empty text part, is idempotent, keeps ids and order, and
 * replays to the same bytes, also after an image of the result became a text part.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { createResponsesRequestView } from '../../providers/responses/request-view.ts';
import type { RequestView } from '../../providers/request-view.ts';
import { TRIM_MARKER } from '../../lib/trim-marker.ts';
import { IMAGE_REMOVED_TEXT } from '../image-replay/index.ts';
import { setAsideNote } from '../image-set-aside/index.ts';
import { TRIM_MARKER_CHARS, type CutLimits } from './cut-middle.ts';
import { replayTrims } from './replay-trims.ts';
import { trimToolResults } from './trim-tool-results.ts';

type Body = Record<string, unknown>;
type Part = { kind: 'text'; text: string } | { kind: 'image' } | { kind: 'struct'; n: number };
type Result = { parts: Part[]; isError: boolean };

const REMOVED = '[...]';
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// Sizes chosen so about half the generated results are over the threshold, most of several parts.
const unit = fc.constantFrom('a', '😀', '𝔘', '👩‍👩‍👧', 'é');
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit, maxLength: 40 }) },
  { weight: 3, arbitrary: fc.string({ unit, minLength: 20, maxLength: 160 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 120 }) },
  { weight: 1, arbitrary: fc.constantFrom(REMOVED, 'x', '😀') },
);
const part: fc.Arbitrary<Part> = fc.oneof(
  { weight: 5, arbitrary: text.map((t) => ({ kind: 'text' as const, text: t })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'image' as const }) },
  { weight: 1, arbitrary: fc.nat(9).map((n) => ({ kind: 'struct' as const, n })) },
);
const results = fc.array(fc.record({ parts: fc.array(part, { maxLength: 8 }), isError: fc.boolean() }), {
  minLength: 1,
  maxLength: 4,
});
const limits: fc.Arbitrary<CutLimits> = fc
  .record({ headChars: fc.nat(40), tailChars: fc.nat(40), slack: fc.nat(40) })
  .map(({ headChars, tailChars, slack }) => ({
    headChars,
    tailChars,
    thresholdChars: headChars + TRIM_MARKER_CHARS + tailChars + slack,
  }));

const PNG = 'iVBORw0KGgo=';

function openai(rs: readonly Result[]): Body {
  const calls = rs.map((_, i) => ({
    id: `call_${i}`,
    type: 'function',
    function: { name: 't', arguments: '{}' },
  }));
  const tools = rs.map((r, i) => ({
    role: 'tool',
    tool_call_id: `call_${i}`,
    content: r.parts.map((p) =>
      p.kind === 'text'
        ? { type: 'text', text: p.text }
        : p.kind === 'image'
          ? { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }
          : { type: 'file', file: { file_id: `f${p.n}` } },
    ),
  }));
  return {
    model: 'm',
    messages: [{ role: 'user', content: 'go' }, { role: 'assistant', tool_calls: calls }, ...tools],
  };
}

function anthropic(rs: readonly Result[]): Body {
  const uses = rs.map((_, i) => ({ type: 'tool_use', id: `toolu_${i}`, name: 't', input: {} }));
  const blocks = rs.map((r, i) => ({
    type: 'tool_result',
    tool_use_id: `toolu_${i}`,
    is_error: r.isError,
    content: r.parts.map((p) =>
      p.kind === 'text'
        ? { type: 'text', text: p.text }
        : p.kind === 'image'
          ? { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }
          : { type: 'search_result', source: `s${p.n}`, title: 't', content: [] },
    ),
  }));
  return {
    model: 'm',
    messages: [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: uses },
      { role: 'user', content: blocks },
    ],
  };
}

function responses(rs: readonly Result[]): Body {
  const items: unknown[] = [{ type: 'message', role: 'user', content: 'go' }];
  rs.forEach((r, i) => {
    items.push({ type: 'function_call', call_id: `call_${i}`, name: 't', arguments: '{}' });
    items.push({
      type: 'function_call_output',
      call_id: `call_${i}`,
      output: r.parts.map((p) =>
        p.kind === 'text'
          ? { type: 'input_text', text: p.text }
          : p.kind === 'image'
            ? { type: 'input_image', image_url: `data:image/png;base64,${PNG}` }
            : { type: 'input_file', file_id: `f${p.n}` },
      ),
    });
  });
  return { model: 'm', input: items };
}

/**
 * The reference cut of one result's text parts, over arrays of code points: the parts that make
 * its text (every text part but a bare `[...]`) laid end to end; the code points before `head` and
 * from `total - tail` on are kept in their parts; the marker goes into the part holding code point
 * `head`; a part left with nothing holds `[...]`. Undefined when the result stays as it is.
 */
function referenceCut(texts: readonly string[], l: CutLimits): string[] | undefined {
  const flat: Array<{ part: number; cp: string }> = [];
  texts.forEach((t, part) => {
    if (t !== REMOVED) for (const cp of Array.from(t)) flat.push({ part, cp });
  });
  const total = flat.length;
  if (total <= l.thresholdChars) return undefined;
  const out = texts.map(() => '');
  flat.forEach(({ part, cp }, i) => {
    if (i === l.headChars) out[part] += TRIM_MARKER;
    if (i < l.headChars || i >= total - l.tailChars) out[part] += cp;
  });
  const cut = texts.map((t, i) => (t === REMOVED ? t : out[i] === '' && t !== '' ? REMOVED : out[i]!));
  const after = cut.filter((t, i) => texts[i] !== REMOVED).reduce((n, t) => n + Array.from(t).length, 0);
  return after < total ? cut : undefined;
}

/** The text-part texts of each tool result, as the view lists them. */
const textsOf = (view: RequestView): string[][] => view.toolResults().map((r) => r.texts.map((s) => s.text));

/** Replaces every image inside a tool result by `text(i)`, as set-aside or the clean-up would. */
function imagesToText(view: RequestView, text: (i: number) => string): void {
  view
    .images()
    .filter((image) => image.inToolResult)
    .forEach((image, i) => image.replaceWithText(text(i)));
}

const FORMATS = [
  ['openai', openai, createOpenaiRequestView],
  ['anthropic', anthropic, createAnthropicRequestView],
  ['responses', responses, createResponsesRequestView],
] as const;

for (const [name, build, makeView] of FORMATS) {
  describe(`trimToolResults properties (${name})`, () => {
    test('each result is cut as the reference cuts it; every other byte stays', () => {
      fc.assert(
        fc.property(results, limits, (rs, l) => {
          const body = build(rs);
          const before = textsOf(makeView(structuredClone(body)));
          const decisions = trimToolResults(makeView(body), l, 'threshold');
          const expectedTexts = before.map((texts) => referenceCut(texts, l) ?? texts);
          // The expected body: the generated one with each result's text parts replaced.
          const expected = build(
            rs.map((r, i) => {
              let k = 0;
              return {
                ...r,
                parts: r.parts.map((p) => (p.kind === 'text' ? { ...p, text: expectedTexts[i]![k++]! } : p)),
              };
            }),
          );
          assert.equal(JSON.stringify(body), JSON.stringify(expected));
          const cutResults = before.filter((texts) => referenceCut(texts, l) !== undefined).length;
          assert.equal(decisions.length, cutResults, 'one decision per trimmed result');
          const ids = makeView(body)
            .toolResults()
            .map((r) => r.callId);
          assert.deepEqual(
            decisions.map((d) => d.callId),
            ids.filter((_, i) => referenceCut(before[i]!, l) !== undefined),
            'decisions name the results, in order',
          );
        }),
        { numRuns: 300 },
      );
    });

    test('never longer, no empty text part, no split code point, within the threshold, idempotent', () => {
      fc.assert(
        fc.property(results, limits, (rs, l) => {
          const body = build(rs);
          const before = textsOf(makeView(structuredClone(body)));
          trimToolResults(makeView(body), l, 'threshold');
          const after = textsOf(makeView(body));
          after.forEach((texts, r) => {
            const was = before[r]!;
            assert.equal(texts.length, was.length, 'every text part keeps its place');
            const cps = (ts: readonly string[]) => ts.reduce((n, t) => n + Array.from(t).length, 0);
            assert.ok(cps(texts) <= cps(was), 'never longer');
            texts.forEach((t, i) => {
              if (was[i] !== '') assert.notEqual(t, '', 'no empty text part');
              if (!LONE_SURROGATE.test(was[i]!)) assert.ok(!LONE_SURROGATE.test(t), 'no split pair');
            });
            if (texts.join('') !== was.join('')) {
              assert.ok(cps(texts.filter((t) => t !== REMOVED)) <= l.thresholdChars, 'within the threshold');
            }
          });
          const once = JSON.stringify(body);
          const again = makeView(body);
          assert.deepEqual(trimToolResults(again, l, 'overflow'), [], 'trimming again decides nothing');
          assert.equal(JSON.stringify(body), once, 'and changes nothing');
          assert.equal(again.changed, false);
        }),
        { numRuns: 300 },
      );
    });

    test('replay gives the same bytes, also once the images of a result became text', () => {
      fc.assert(
        fc.property(results, limits, fc.boolean(), (rs, l, noteFirst) => {
          const first = build(rs);
          const decisions = trimToolResults(makeView(first), l, 'threshold');

          // The history resent as it was.
          const resent = build(rs);
          assert.equal(replayTrims(makeView(resent), decisions), decisions.length);
          assert.equal(JSON.stringify(resent), JSON.stringify(first));

          // Images set aside before replay (their notes come first), or cleaned up after it.
          const note = (i: number) => setAsideNote({ ordinal: i + 1, mediaType: 'image/png', bytes: 8 });
          const stand = noteFirst ? note : () => IMAGE_REMOVED_TEXT;
          const moved = build(rs);
          if (noteFirst) imagesToText(makeView(moved), stand);
          assert.equal(replayTrims(makeView(moved), decisions), decisions.length);
          if (!noteFirst) imagesToText(makeView(moved), stand);
          imagesToText(makeView(first), stand);
          assert.equal(JSON.stringify(moved), JSON.stringify(first));
          assert.deepEqual(trimToolResults(makeView(moved), l, 'threshold'), [], 'and nothing to trim again');
        }),
        { numRuns: 300 },
      );
    });

    test('a trim made while an image was text replays on the history where it is still an image', () => {
      fc.assert(
        fc.property(results, limits, (rs, l) => {
          // The clean-up ran before the trim; on the next request replay runs before the clean-up.
          const first = build(rs);
          imagesToText(makeView(first), () => IMAGE_REMOVED_TEXT);
          const decisions = trimToolResults(makeView(first), l, 'threshold');
          const next = build(rs);
          assert.equal(replayTrims(makeView(next), decisions), decisions.length);
          imagesToText(makeView(next), () => IMAGE_REMOVED_TEXT);
          assert.equal(JSON.stringify(next), JSON.stringify(first));
        }),
        { numRuns: 300 },
      );
    });
  });
}
