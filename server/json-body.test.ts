/**
 * A large body parsed by the pieces its shape scan located gives exactly what JSON.parse of the
 * whole text gives, and a text JSON.parse refuses is refused with JSON.parse's own message.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OdaError } from '../lib/errors.ts';
import { PIECEWISE_FROM, parseJsonBody, parsePieces } from './json-body.ts';
import { DEFAULT_JSON_LIMITS, JsonShapeScan } from './json-limits.ts';

const LIMITS = { ...DEFAULT_JSON_LIMITS, maxMessages: 1e6, maxValues: 1e9, maxImages: 1e6 };

/** The scan the JSON limits check leaves on `res.locals.bodyShape`, in slices as it runs. */
function scanOf(buf: Buffer, budget = Infinity): JsonShapeScan | undefined {
  const scan = new JsonShapeScan(buf, LIMITS);
  while (!scan.done) scan.step(budget);
  return scan.exceeded === undefined ? scan : undefined;
}

type Outcome = { body: Record<string, unknown> } | { error: string };

function outcome(parse: () => { body: Record<string, unknown> }): Outcome {
  try {
    return { body: parse().body };
  } catch (e) {
    assert.ok(e instanceof OdaError, `an OdaError, not ${String(e)}`);
    return { error: `${e.status} ${e.code} ${e.message}` };
  }
}

/** parseJsonBody with the scan, against JSON.parse of the whole text (no scan). */
function assertSameAsWhole(buf: Buffer, budget?: number): Outcome {
  const whole = outcome(() => parseJsonBody(buf));
  const scan = scanOf(buf, budget);
  const pieced = outcome(() => parseJsonBody(buf, scan));
  assert.deepStrictEqual(pieced, whole);
  if ('body' in whole && 'body' in pieced) {
    // Same own keys in the same order (deepStrictEqual does not look at the order).
    assert.deepStrictEqual(Object.keys(pieced.body), Object.keys(whole.body));
  }
  return whole;
}

const PAD = 'x'.repeat(PIECEWISE_FROM);

/** A request body over PIECEWISE_FROM: a messages list, other members, a long member somewhere. */
const largeBody = fc
  .record({
    others: fc.dictionary(fc.string({ unit: 'binary', maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), {
      maxKeys: 5,
    }),
    messages: fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 12 }),
    listKey: fc.constantFrom('messages', 'input'),
    padAt: fc.constantFrom('first', 'middle', 'last', 'in-a-message'),
    indent: fc.constantFrom(undefined, 1, 2, '\t', ' \r\n'),
  })
  .map(({ others, messages, listKey, padAt, indent }) => {
    const list = padAt === 'in-a-message' ? [...messages, { role: 'user', content: PAD }] : messages;
    const members: Array<[string, unknown]> = [...Object.entries(others), ['model', 'm'], [listKey, list]];
    if (padAt === 'first') members.unshift(['pad', PAD]);
    if (padAt === 'middle') members.splice(Math.floor(members.length / 2), 0, ['pad', PAD]);
    if (padAt === 'last') members.push(['pad', PAD]);
    // Written member by member, so that a `__proto__` key is written as a member too.
    const parts = members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v, null, indent)}`);
    const sep = typeof indent === 'string' ? indent : ' '.repeat(indent ?? 0);
    return `${sep}{${sep}${parts.join(`,${sep}`)}${sep}}${sep}`;
  });

describe('a large body parsed by pieces', () => {
  test('is what JSON.parse gives, and takes the pieces road', () => {
    fc.assert(
      fc.property(largeBody, fc.constantFrom(Infinity, 4096, 100_000), (text, budget) => {
        const buf = Buffer.from(text, 'utf8');
        assert.ok(buf.length >= PIECEWISE_FROM);
        const whole = assertSameAsWhole(buf, budget);
        assert.ok('body' in whole, 'the generated body is valid JSON');
        const scan = scanOf(buf, budget)!;
        if (!scan.repeatedKeys && !scan.members.has('__proto__')) {
          assert.deepStrictEqual(parsePieces(buf, scan), whole.body, 'parsed by pieces');
        }
      }),
      { numRuns: 150 },
    );
  });

  test('a text one byte away from valid is refused (or taken) exactly as JSON.parse does', () => {
    fc.assert(
      fc.property(
        largeBody,
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.constantFrom('delete', ',', ':', ' ', '"', '}', ']', '{', '[', '0', 'x', '\\'),
        (text, where, edit) => {
          // Most bytes are the long member's; the edit lands among the others' bytes.
          const padStart = text.indexOf(PAD);
          const outside = text.length - PAD.length;
          let at = Math.floor(where * outside);
          if (at > padStart) at += PAD.length;
          const edited =
            edit === 'delete'
              ? text.slice(0, at) + text.slice(at + 1)
              : text.slice(0, at) + edit + text.slice(at);
          assertSameAsWhole(Buffer.from(edited, 'utf8'));
        },
      ),
      { numRuns: 400 },
    );
  });

  test('the cases JSON.parse settles its own way', () => {
    const big = (members: string) => Buffer.from(`{${members},"pad":"${PAD}"}`, 'utf8');
    // A key given twice: the last one counts.
    let r = assertSameAsWhole(big('"messages":[1],"model":"m","messages":[{"role":"user"}]'));
    assert.deepEqual('body' in r && r.body.messages, [{ role: 'user' }]);
    // A `__proto__` member is an own property, not the object's prototype.
    r = assertSameAsWhole(big('"__proto__":{"polluted":true},"messages":[]'));
    assert.ok('body' in r && Object.hasOwn(r.body, '__proto__'));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    // A missing comma between members, a missing colon, text after the object: JSON.parse's 400.
    for (const bad of [
      Buffer.from(`{"model":"m" "messages":[],"pad":"${PAD}"}`),
      Buffer.from(`{"model" "m","messages":[],"pad":"${PAD}"}`),
      Buffer.from(`{"model":"m","messages":[1 2],"pad":"${PAD}"}`),
      Buffer.from(`{"model":"m","messages":[],"pad":"${PAD}"} {}`),
      Buffer.from(`{"model":"m","messages":[],"pad":"${PAD}",}`),
    ]) {
      const o = assertSameAsWhole(bad);
      assert.ok('error' in o && o.error.startsWith('400 ODA_ERR_BAD_JSON request body is not valid JSON'));
    }
    // Not an object at all.
    const list = assertSameAsWhole(Buffer.from(`[${JSON.stringify(PAD)}]`));
    assert.ok('error' in list && list.error.includes('must be a JSON object'));
  });

  test('escaped keys, and text that is not ASCII', () => {
    const text = `{"mod\\u0065l":"m","mess\\u0061ges":[{"role":"user","content":"zażółć \\ud83d\\ude00 😀"}],"pad":"${PAD}"}`;
    const buf = Buffer.from(text, 'utf8');
    const r = assertSameAsWhole(buf);
    assert.ok('body' in r);
    assert.deepStrictEqual(parsePieces(buf, scanOf(buf)!), r.body);
    assert.equal((r.body.messages as Array<{ content: string }>)[0]!.content, 'zażółć 😀 😀');
  });
});
