/**
 * An edited value written over the client's bytes keeps the bytes of every sub-value the edit did
 * not change: big integers, `1.0`, `-0.0`, integer-like keys in the client's order, escapes and
 * spacing. Only the changed leaves and the added members are written again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rewriteJson } from './json-rewrite.ts';

/** A JSON text as the client wrote it: leaves keep their own bytes. */
type Tree =
  | { readonly kind: 'leaf'; readonly raw: string }
  | { readonly kind: 'array'; readonly items: readonly Tree[] }
  | { readonly kind: 'object'; readonly entries: ReadonlyArray<readonly [string, Tree]> };

/** Every character as a `\uXXXX` escape: the same text in other bytes. */
const escaped = (s: string) =>
  `"${Array.from(s, (c) => [...c].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')).join('')}"`;

const text = fc.string({ maxLength: 8, unit: 'grapheme' });
const stringRaw = fc.oneof(
  text.map((s) => JSON.stringify(s)),
  text.map(escaped),
  fc.constantFrom('"a\\/b"', '"\\u2028\\ud800"', '"\\"q\\\\"', '"tab\\tnl\\n"'),
);
const leafRaw = fc.oneof(
  stringRaw,
  fc.constantFrom(
    '1.0',
    '-0.0',
    '-0',
    '0.0',
    '18446744073709551615',
    '12345678901234567890',
    '-9007199254740993',
    '1e3',
    '1E+2',
    '0.10',
    '-12.50',
    'true',
    'false',
    'null',
  ),
  fc.integer().map(String),
);
const keyRaw = fc
  .oneof(
    stringRaw,
    fc.nat(40).map((n) => `"${n}"`),
    fc.constantFrom('"4294967295"', '"4294967296"', '"01"', '"type"', '"a"'),
  )
  .filter((raw) => JSON.parse(raw) !== '__proto__');

const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leafRaw.map((raw): Tree => ({ kind: 'leaf', raw })),
    fc.array(tie('tree'), { maxLength: 4 }).map((items): Tree => ({ kind: 'array', items })),
    fc
      .uniqueArray(fc.tuple(keyRaw, tie('tree')), {
        maxLength: 5,
        selector: ([k]) => JSON.parse(k) as string,
      })
      .map((entries): Tree => ({ kind: 'object', entries })),
  ),
}));

const SPACES = ['', ' ', '\n  ', '\t', '\r\n', '  '];

/** The space at one slot of one container, the same however the value was edited. */
function space(seed: number, path: string, slot: number): string {
  let h = seed >>> 0;
  for (const c of `${path}#${slot}`) h = (Math.imul(h ^ c.charCodeAt(0), 0x9e3779b1) ^ (h >>> 15)) >>> 0;
  return SPACES[h % SPACES.length]!;
}

/**
 * The tree's text; given `edited` (the parsed value after edits), the text the rewrite must give:
 * the client's bytes for each unchanged leaf, JSON for a changed one, added members and elements
 * before the closing bracket.
 */
function render(t: Tree, seed: number, path = '', edited?: { value: unknown }): string {
  const v = edited?.value;
  if (t.kind === 'leaf') {
    return !edited || Object.is(JSON.parse(t.raw), v) ? t.raw : JSON.stringify(v);
  }
  const sp = (slot: number) => space(seed, path, slot);
  if (t.kind === 'array') {
    const items = t.items.map(
      (item, k) =>
        sp(2 * k) +
        render(item, seed, `${path}/${k}`, edited && { value: (v as unknown[])[k] }) +
        sp(2 * k + 1),
    );
    const added = edited ? (v as unknown[]).slice(t.items.length).map((x) => JSON.stringify(x)) : [];
    const tail = added.length ? (t.items.length ? ',' : '') + added.join(',') : '';
    return `[${items.join(',') || sp(0)}${tail}]`;
  }
  const obj = v as Record<string, unknown>;
  const sent = new Set(t.entries.map(([k]) => JSON.parse(k) as string));
  const members = t.entries.map(([k, item], i) => {
    const key = JSON.parse(k) as string;
    const value = render(item, seed, `${path}/${key}`, edited && { value: obj[key] });
    return `${sp(3 * i)}${k}${sp(3 * i + 1)}:${sp(3 * i + 2)}${value}${sp(3 * i + 3)}`;
  });
  const added = edited ? Object.keys(obj).filter((k) => !sent.has(k)) : [];
  const tail = added.map(
    (k, i) => `${t.entries.length || i ? ',' : ''}${JSON.stringify(k)}:${JSON.stringify(obj[k])}`,
  );
  return `{${members.join(',') || sp(0)}${tail.join('')}}`;
}

/** The parsed places an edit can reach: string leaves, objects, arrays (by path from the root). */
function places(
  t: Tree,
  path: Array<string | number> = [],
): Array<{ path: Array<string | number>; tree: Tree }> {
  const here = [{ path, tree: t }];
  if (t.kind === 'array') return here.concat(t.items.flatMap((item, k) => places(item, [...path, k])));
  if (t.kind === 'object') {
    return here.concat(t.entries.flatMap(([k, item]) => places(item, [...path, JSON.parse(k) as string])));
  }
  return here;
}

function at(root: unknown, path: ReadonlyArray<string | number>): unknown {
  return path.reduce<unknown>((v, p) => (v as Record<string | number, unknown>)[p], root);
}

const edit = fc.record({
  pick: fc.nat(),
  key: keyRaw.map((k) => JSON.parse(k) as string),
  text,
  value: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
});

test('a rewrite keeps the bytes of what the edits did not change, and parses to the edited value', () => {
  fc.assert(
    fc.property(tree, fc.array(edit, { maxLength: 4 }), fc.nat(), (t, edits, seed) => {
      const raw = Buffer.from(`  ${render(t, seed)} `);
      const start = 2;
      const end = raw.length - 1;
      const value = { root: JSON.parse(raw.toString('utf8')) as unknown };
      const reachable = places(t);
      for (const e of edits) {
        const place = reachable[e.pick % reachable.length]!;
        const parent = place.path.length ? at(value.root, place.path.slice(0, -1)) : value;
        const slot = place.path.length ? place.path[place.path.length - 1]! : 'root';
        const target = at(value.root, place.path);
        if (place.tree.kind === 'leaf' && typeof target === 'string') {
          (parent as Record<string | number, unknown>)[slot] = e.text;
        } else if (place.tree.kind === 'array') (target as unknown[]).push(e.value);
        else if (place.tree.kind === 'object' && !Object.hasOwn(target as object, e.key)) {
          (target as Record<string, unknown>)[e.key] = e.value;
        }
      }
      const out = rewriteJson(raw, start, end, value.root)!;
      assert.deepStrictEqual(JSON.parse(out.toString('utf8')), value.root);
      assert.equal(out.toString('utf8'), render(t, seed, '', { value: value.root }));
    }),
    { numRuns: 1500 },
  );
});

test('an unedited value is its bytes exactly', () => {
  fc.assert(
    fc.property(tree, fc.nat(), (t, seed) => {
      const raw = Buffer.from(render(t, seed));
      const out = rewriteJson(raw, 0, raw.length, JSON.parse(raw.toString('utf8')));
      assert.equal(out?.toString('utf8'), raw.toString('utf8'));
    }),
  );
});

test("the reported schema: a marker added to a tool leaves the tool's schema as the client wrote it", () => {
  const schema =
    '{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615,"minimum":0.0,"10":"x","a":"y","2":"z"}}}';
  const raw = Buffer.from(`{"name":"t","input_schema":${schema}}`);
  const tool = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  tool.cache_control = { type: 'ephemeral' };
  const out = rewriteJson(raw, 0, raw.length, tool)!.toString('utf8');
  assert.equal(out, `{"name":"t","input_schema":${schema},"cache_control":{"type":"ephemeral"}}`);
});

test('what cannot be kept is written whole, that sub-value only', () => {
  const write = (text: string, edit: (v: Record<string, unknown>) => void) => {
    const raw = Buffer.from(text);
    const value = JSON.parse(text) as Record<string, unknown>;
    edit(value);
    const out = rewriteJson(raw, 0, raw.length, value)!.toString('utf8');
    assert.deepStrictEqual(JSON.parse(out), value);
    return out;
  };
  const big = '"big":12345678901234567890';
  // A key removed, a key moved, a key the client repeated, a value of another type.
  assert.equal(
    write(`{${big},"o":{"a":1.0,"b":2}}`, (v) => delete (v.o as Record<string, unknown>).a),
    `{${big},"o":{"b":2}}`,
  );
  assert.equal(
    write(`{${big},"o":{"a":1.0,"b":2}}`, (v) => {
      const o = v.o as Record<string, unknown>;
      delete o.a;
      o.a = 1;
    }),
    `{${big},"o":{"b":2,"a":1}}`,
  );
  assert.equal(
    write(`{${big},"o":{"a":1.0,"a":2.0}, "x": 1}`, (v) => (v.x = 2)),
    `{${big},"o":{"a":2}, "x": 2}`,
  );
  assert.equal(
    write(`{${big},"c":"text"}`, (v) => (v.c = [{ t: 1 }])),
    `{${big},"c":[{"t":1}]}`,
  );
  // An array made shorter.
  assert.equal(
    write(`{${big},"l":[1.0, 2.0]}`, (v) => (v.l as unknown[]).pop()),
    `{${big},"l":[1]}`,
  );
  // Empty containers take added members and elements without a comma.
  assert.equal(
    write(`{"o":{ },"l":[ ]}`, (v) => ((v.o = { k: 1 }), (v.l = [1]))),
    `{"o":{ "k":1},"l":[ 1]}`,
  );
  // A value that writes nothing: nothing to splice.
  assert.equal(rewriteJson(Buffer.from('1'), 0, 1, undefined), undefined);
});

test('bytes the scan cannot follow: the value is written whole, never an error', () => {
  for (const text of ['{"a":1,}', '{"a" 1}', '[1 2]', '{"a":"x}', '{"a":[1}', 'nul', '{"a":1}}']) {
    const raw = Buffer.from(text);
    const value = { a: 2, b: [1] };
    assert.equal(rewriteJson(raw, 0, raw.length, value)?.toString('utf8'), JSON.stringify(value));
  }
  assert.equal(rewriteJson(Buffer.from('{}'), 5, 9, { a: 1 })?.toString('utf8'), '{"a":1}');
});

test('a long string: only the edited one is written again', () => {
  const long = 'x😀'.repeat(50_000);
  const raw = Buffer.from(
    `{"type":"tool_result","content":${JSON.stringify(long)},"zz":12345678901234567890}`,
  );
  const value = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
  value.content = 'short';
  const out = rewriteJson(raw, 0, raw.length, value)!.toString('utf8');
  assert.equal(out, '{"type":"tool_result","content":"short","zz":12345678901234567890}');
});
