import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_JSON_LIMITS, JsonShapeScan } from './json-limits.ts';

/** The scan's ranges for `text`, scanned in slices of `budget` bytes. */
function rangesOf(text: string, budget = Infinity) {
  const bytes = Buffer.from(text, 'utf8');
  const scan = new JsonShapeScan(bytes, DEFAULT_JSON_LIMITS);
  while (!scan.done) scan.step(budget);
  return { bytes, list: scan.list };
}

/** The elements the ranges point at, parsed. */
function elements(bytes: Buffer, ranges: readonly number[]): unknown[] {
  const out: unknown[] = [];
  for (let k = 0; k < ranges.length; k += 2) {
    out.push(JSON.parse(bytes.toString('utf8', ranges[k], ranges[k + 1])));
  }
  return out;
}

test('each range is exactly one element of the top-level messages array, whatever the spacing', () => {
  fc.assert(
    fc.property(
      fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 12 }),
      fc.constantFrom(undefined, 1, 2, '\t'),
      fc.constantFrom(1, 7, 64, Infinity),
      (messages, indent, budget) => {
        const text = JSON.stringify({ model: 'm', messages, stream: false }, null, indent);
        const { bytes, list } = rangesOf(text, budget);
        assert.equal(list?.key, 'messages');
        assert.equal(list.ranges.length, 2 * messages.length);
        assert.deepEqual(elements(bytes, list.ranges), JSON.parse(JSON.stringify(messages)));
        // Ranges are in order and never overlap.
        for (let i = 1; i < list.ranges.length; i++) assert.ok(list.ranges[i - 1]! <= list.ranges[i]!);
      },
    ),
    { numRuns: 300 },
  );
});

test('strings with escapes and brackets inside, and the Responses input list', () => {
  const input = ['a "quoted" ] , [ text\\', { type: 'message', content: 'x}{,' }, 3, null, true];
  const { bytes, list } = rangesOf(JSON.stringify({ input, model: 'm' }));
  assert.equal(list?.key, 'input');
  assert.deepEqual(elements(bytes, list.ranges), input);
});

test('only the top-level array, the last one when the key repeats (as JSON.parse keeps it)', () => {
  const nested = rangesOf('{"x":{"messages":[1,2]},"meta":[{"input":[3]}]}');
  assert.equal(nested.list, undefined);
  const repeated = rangesOf('{"messages":[1,2,3],"model":"m","messages":[{"a":4}, 5]}');
  assert.equal(repeated.list?.key, 'messages');
  assert.deepEqual(elements(repeated.bytes, repeated.list.ranges), [{ a: 4 }, 5]);
  const empty = rangesOf('{"messages":[ ]}');
  assert.deepEqual(empty.list, { key: 'messages', ranges: [] });
});

/** The bytes of the scan's top-level tools array, parsed (undefined when it found none). */
function toolsOf(text: string, budget = Infinity): unknown {
  const bytes = Buffer.from(text, 'utf8');
  const scan = new JsonShapeScan(bytes, DEFAULT_JSON_LIMITS);
  while (!scan.done) scan.step(budget);
  return scan.tools ? JSON.parse(bytes.toString('utf8', scan.tools[0], scan.tools[1])) : undefined;
}

test('the tools range is exactly the top-level tools array JSON.parse keeps, whatever the spacing', () => {
  fc.assert(
    fc.property(
      fc.array(fc.jsonValue({ maxDepth: 4 }), { maxLength: 8 }),
      fc.constantFrom(undefined, 1, '\t'),
      fc.constantFrom(1, 7, 64, Infinity),
      (tools, indent, budget) => {
        const text = JSON.stringify(
          { model: 'm', messages: [{ tools: [1] }], tools, stream: true },
          null,
          indent,
        );
        assert.deepEqual(toolsOf(text, budget), JSON.parse(JSON.stringify(tools)));
      },
    ),
    { numRuns: 300 },
  );
});

test('tools: only at the top level, the last key wins (a later non-array value leaves no range), escaped keys count', () => {
  assert.equal(toolsOf('{"x":{"tools":[1,2]},"meta":[{"tools":[3]}]}'), undefined);
  assert.deepEqual(toolsOf('{"tools":[1],"model":"m","tools":[{"name":"b"}]}'), [{ name: 'b' }]);
  assert.equal(toolsOf('{"tools":[{"name":"a"}],"tools":null}'), undefined);
  assert.deepEqual(toolsOf('{"tool\\u0073":[{"name":"c]"}]}'), [{ name: 'c]' }]);
  assert.deepEqual(toolsOf('{"tools":[]}'), []);
});

test('each top-level member range is exactly the value JSON.parse keeps for that key', () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string({ maxLength: 6, unit: 'binary' }), fc.jsonValue({ maxDepth: 3 }), {
        maxKeys: 6,
      }),
      fc.constantFrom(undefined, 1, '\t'),
      fc.constantFrom(1, 5, 64, Infinity),
      (members, indent, budget) => {
        const text = JSON.stringify(members, null, indent);
        const bytes = Buffer.from(text, 'utf8');
        const scan = new JsonShapeScan(bytes, DEFAULT_JSON_LIMITS);
        while (!scan.done) scan.step(budget);
        const parsed = JSON.parse(text) as Record<string, unknown>;
        assert.deepEqual([...scan.members.keys()].sort(), Object.keys(parsed).sort());
        assert.equal(scan.repeatedKeys, false);
        for (const [key, [start, end]] of scan.members) {
          assert.deepEqual(JSON.parse(bytes.toString('utf8', start, end)), parsed[key], key);
        }
      },
    ),
    { numRuns: 300 },
  );
  const repeated = Buffer.from('{"a":1,"b":[2],"a":{"c":3} }');
  const scan = new JsonShapeScan(repeated, DEFAULT_JSON_LIMITS);
  scan.step(repeated.length);
  assert.deepEqual(JSON.parse(repeated.toString('utf8', ...scan.members.get('a')!)), { c: 3 });
  assert.equal(scan.repeatedKeys, true);
});

/** True when some object anywhere in `value` has the key `cache_control` (what the view's walk finds). */
function hasCacheControlKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasCacheControlKey);
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([k, v]) => k === 'cache_control' || hasCacheControlKey(v));
}

test('cacheControlKey: a key that reads cache_control at any depth, escaped or not, and no value', () => {
  // Keys drawn so that `cache_control` and its near misses are common; the same words as values.
  const word = fc.constantFrom('cache_control', 'cache_contro', 'cache_controls', 'type', 'text', 'x');
  const json = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      word,
      fc.integer(),
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(word, tie('value'), { maxKeys: 3 }),
    ),
  })).value;
  fc.assert(
    fc.property(
      json,
      fc.constantFrom('plain', 'escape-key', 'escape-all'),
      fc.constantFrom(1, 5, Infinity),
      (value, spelling, budget) => {
        let text = JSON.stringify({ model: 'm', messages: [value] });
        // A key or a value may spell a letter as `\u` escape: the key is still `cache_control`.
        if (spelling === 'escape-key') text = text.replaceAll('"cache_control":', '"cache\\u005fcontrol":');
        if (spelling === 'escape-all') text = text.replaceAll('cache_control', 'c\\u0061che_control');
        const bytes = Buffer.from(text, 'utf8');
        const scan = new JsonShapeScan(bytes, DEFAULT_JSON_LIMITS);
        while (!scan.done) scan.step(budget);
        assert.equal(scan.cacheControlKey, hasCacheControlKey(JSON.parse(text)), text);
      },
    ),
    { numRuns: 500 },
  );
  const scanned = (text: string) => {
    const scan = new JsonShapeScan(Buffer.from(text), DEFAULT_JSON_LIMITS);
    scan.step(Infinity);
    return scan.cacheControlKey;
  };
  assert.equal(scanned('{"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}]}'), true);
  assert.equal(scanned('{"cache_control":{"type":"ephemeral"},"messages":[]}'), true, 'top level');
  assert.equal(scanned('{"messages":[{"role":"user","content":"cache_control"}]}'), false, 'a value');
  assert.equal(scanned('{"messages":[{"content":"\\"cache_control\\":{}"}]}'), false, 'a key in a text');
  assert.equal(scanned('{"a":{"b":[1,{"cache_control":null}]}}'), true, 'nested, after a list');
});
