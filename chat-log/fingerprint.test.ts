import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { canonicalStructure, fingerprint, formatStructure, structureFingerprint } from './fingerprint.ts';
import { checkRecord, currentStructures, parseRecord, updateRecord } from './fingerprint-record.ts';
import { formats, VERSIONS } from './format/index.ts';

const committed = () =>
  parseRecord(JSON.parse(readFileSync(new URL('./fingerprints.json', import.meta.url), 'utf8')) as unknown);

describe('fingerprints.json (the committed check)', () => {
  test("today's schemas match the shipped fingerprints (or recorded allowed changes)", () => {
    const result = checkRecord(committed(), currentStructures());
    assert.ok(result.ok, result.lines.join('\n'));
  });

  test('every version is recorded with a fingerprint of its recorded structure', () => {
    const record = committed();
    assert.deepEqual(Object.keys(record.versions).map(Number), [...VERSIONS]);
    for (const v of VERSIONS) {
      const entry = record.versions[String(v)];
      assert.ok(entry !== undefined);
      assert.equal(structureFingerprint(entry.structure), entry.fingerprint);
      assert.deepEqual(entry.structure, JSON.parse(JSON.stringify(entry.structure)));
    }
    // an allowed in-version change moves the current fingerprint only with a recorded note
    for (const v of VERSIONS) {
      const now = structureFingerprint(formatStructure(formats[v]));
      const recorded = record.allowedChanges.some((a) => a.version === v && a.fingerprint === now);
      assert.ok(
        now === record.versions[String(v)]?.fingerprint || recorded,
        `v${v} fingerprint is accounted for`,
      );
    }
  });

  test('the versions have distinct fingerprints', () => {
    const fps = VERSIONS.map((v) => committed().versions[String(v)]?.fingerprint);
    assert.equal(new Set(fps).size, VERSIONS.length);
  });
});

// A small format in the style of the real ones, to change in tests.
const int = z.number().int().nonnegative();
function makeFormat(opts: { extra?: boolean; sourceKinds?: string[]; requireModel?: boolean } = {}) {
  const message = z.strictObject({
    seq: int,
    type: z.literal('message'),
    content: z.array(
      z.discriminatedUnion('kind', [z.strictObject({ kind: z.literal('text'), text: z.string() })]),
    ),
    source: z.strictObject({ kind: z.enum(opts.sourceKinds ?? ['client', 'provider']) }).optional(),
    ...(opts.extra === true ? { extra: z.string().optional() } : {}),
  });
  const request = z.strictObject({
    seq: int,
    type: z.literal('request'),
    model: opts.requireModel === true ? z.string() : z.string().optional(),
  });
  return {
    header: z.strictObject({ version: z.literal(9), id: z.string() }),
    event: z.discriminatedUnion('type', [message, request]),
  };
}

describe('record check and update', () => {
  const base = () => {
    const r = updateRecord(undefined, new Map([[9, formatStructure(makeFormat())]]));
    assert.ok(r.ok);
    return r.record;
  };

  test('same passes', () => {
    assert.equal(checkRecord(base(), new Map([[9, formatStructure(makeFormat())]])).ok, true);
  });

  test('an allowed change passes only once recorded with a note', () => {
    const changed = new Map([[9, formatStructure(makeFormat({ extra: true }))]]);
    const unrecorded = checkRecord(base(), changed);
    assert.equal(unrecorded.ok, false);
    assert.match(unrecorded.lines.join('\n'), /not recorded in allowedChanges with a note/);
    assert.match(unrecorded.lines.join('\n'), /event message: optional property "extra" was added/);
    const noNote = updateRecord(base(), changed);
    assert.equal(noNote.ok, false);
    const withBlankNote = base();
    withBlankNote.allowedChanges.push({
      version: 9,
      fingerprint: structureFingerprint(changed.get(9) ?? formatStructure(makeFormat())),
      changes: [],
      note: '  ',
    });
    assert.equal(checkRecord(withBlankNote, changed).ok, false);
    const recorded = updateRecord(base(), changed, 'message.extra carries the client tag');
    assert.ok(recorded.ok);
    assert.equal(recorded.record.allowedChanges.length, 1);
    // the shipped baseline stays as it was
    assert.deepEqual(recorded.record.versions['9'], base().versions['9']);
    assert.equal(checkRecord(recorded.record, changed).ok, true);
  });

  test('a breaking change fails and cannot be recorded', () => {
    const changed = new Map([[9, formatStructure(makeFormat({ requireModel: true }))]]);
    const result = checkRecord(base(), changed);
    assert.equal(result.ok, false);
    assert.match(
      result.lines.join('\n'),
      /event request: property "model" became required: this change needs a new format version \(v6\)/,
    );
    assert.equal(updateRecord(base(), changed, 'please').ok, false);
  });

  test('a tampered record or a missing version fails', () => {
    const tampered = base();
    const entry = tampered.versions['9'];
    assert.ok(entry !== undefined);
    tampered.versions['9'] = { ...entry, fingerprint: '0'.repeat(64) };
    assert.equal(checkRecord(tampered, new Map([[9, formatStructure(makeFormat())]])).ok, false);
    assert.equal(checkRecord(base(), new Map([[8, formatStructure(makeFormat())]])).ok, false);
  });
});

describe('fingerprint: what is not counted', () => {
  const item = z.strictObject({ name: z.string(), size: int.optional() });
  const reference = z.strictObject({ a: z.string(), b: z.array(item), c: z.union([z.string(), z.number()]) });

  test('descriptions and metadata', () => {
    const described = z
      .strictObject({
        a: z.string().describe('the a'),
        b: z.array(item.describe('an item')).meta({ title: 'B' }),
        c: z.union([z.string(), z.number()]),
      })
      .describe('whole');
    assert.equal(fingerprint(described), fingerprint(reference));
  });

  test('alias names and where a schema is declared', () => {
    const Alias = reference;
    const Renamed = { other: Alias }.other;
    assert.equal(fingerprint(Renamed), fingerprint(reference));
    const rebuilt = z.strictObject({
      a: z.string(),
      b: z.array(z.strictObject({ name: z.string(), size: z.number().int().nonnegative().optional() })),
      c: z.union([z.string(), z.number()]),
    });
    assert.equal(fingerprint(rebuilt), fingerprint(reference));
  });

  test('object field order, union member order and intersection part order', () => {
    const reordered = z.strictObject({
      c: z.union([z.number(), z.string()]),
      b: z.array(item),
      a: z.string(),
    });
    assert.equal(fingerprint(reordered), fingerprint(reference));
    const x = z.object({ x: z.string() });
    const y = z.object({ y: z.number() });
    assert.equal(fingerprint(z.intersection(x, y)), fingerprint(z.intersection(y, x)));
    const d1 = z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('a') }),
      z.strictObject({ kind: z.literal('b') }),
    ]);
    const d2 = z.discriminatedUnion('kind', [
      z.strictObject({ kind: z.literal('b') }),
      z.strictObject({ kind: z.literal('a') }),
    ]);
    assert.equal(fingerprint(d1), fingerprint(d2));
    assert.equal(fingerprint(z.enum(['x', 'y'])), fingerprint(z.enum(['y', 'x'])));
  });

  test('readonly markers and brands', () => {
    const ro = z.strictObject({
      a: z.string().readonly(),
      b: z.array(item).readonly(),
      c: z.union([z.string(), z.number()]),
    });
    assert.equal(fingerprint(ro), fingerprint(reference));
    assert.equal(fingerprint(reference.readonly()), fingerprint(reference));
    const branded = z.strictObject({
      a: z.string().brand<'Id'>(),
      b: z.array(item.brand<'Item'>()),
      c: z.union([z.string(), z.number()]),
    });
    assert.equal(fingerprint(branded), fingerprint(reference));
  });

  test('a shared sub-type versus an inlined copy', () => {
    const shared = z.strictObject({ first: item, second: item });
    const inlined = z.strictObject({
      first: z.strictObject({ name: z.string(), size: int.optional() }),
      second: z.strictObject({ name: z.string(), size: int.optional() }),
    });
    assert.equal(fingerprint(shared), fingerprint(inlined));
  });

  test('recursive types: two declarations of the same recursion agree', () => {
    assert.equal(fingerprint(z.json()), fingerprint(z.json()));
    type Tree = { label: string; children: Tree[] };
    const treeA: z.ZodType<Tree> = z.lazy(() =>
      z.strictObject({ label: z.string(), children: z.array(treeA) }),
    );
    const treeB: z.ZodType<Tree> = z.strictObject({
      label: z.string(),
      children: z.array(z.lazy(() => treeB)),
    });
    assert.equal(fingerprint(treeA), fingerprint(treeB));
    assert.deepEqual(canonicalStructure(treeA), {
      type: 'object',
      properties: {
        children: { optional: false, schema: { type: 'array', element: { type: 'recursive', up: 2 } } },
        label: { optional: false, schema: { type: 'string' } },
      },
      rest: { type: 'never' },
    });
  });
});

describe('fingerprint: what is counted', () => {
  const differs = (a: z.core.$ZodType, b: z.core.$ZodType) => assert.notEqual(fingerprint(a), fingerprint(b));

  test('tuple element order', () =>
    differs(z.tuple([z.string(), z.number()]), z.tuple([z.number(), z.string()])));
  test('optionality', () => differs(z.object({ a: z.string() }), z.object({ a: z.string().optional() })));
  test('a new union variant', () =>
    differs(z.union([z.string(), z.number()]), z.union([z.string(), z.number(), z.boolean()])));
  test('a new enum value', () => differs(z.enum(['a']), z.enum(['a', 'b'])));
  test('a type change', () => differs(z.object({ a: z.string() }), z.object({ a: z.number() })));
  test('property names', () => differs(z.object({ a: z.string() }), z.object({ b: z.string() })));
  test('literal values', () => differs(z.literal('a'), z.literal('b')));
  test('constraints', () => {
    differs(z.number(), z.number().int());
    differs(z.string().regex(/^a$/), z.string().regex(/^b$/));
  });
  test('unknown-key policy', () => differs(z.strictObject({ a: z.string() }), z.object({ a: z.string() })));
  test('nullable', () => differs(z.string(), z.string().nullable()));
});
