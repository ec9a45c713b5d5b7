import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { compareStructures, type Change, type Comparison } from './compat-check.ts';
import { formatStructure } from './fingerprint.ts';
import { formats } from './format/index.ts';

const int = z.number().int().nonnegative();
const textPart = z.strictObject({ kind: z.literal('text'), text: z.string() });
const imagePart = z.strictObject({ kind: z.literal('image'), url: z.string() });
const payloadV1 = z.strictObject({ payloadVersion: z.literal(1), note: z.string() });
const payloadV2 = z.strictObject({ payloadVersion: z.literal(2), note: z.string(), score: int });
const payloadV3 = z.strictObject({
  payloadVersion: z.literal(3),
  note: z.string(),
  tags: z.array(z.string()),
});

interface Knobs {
  messageExtra?: z.ZodType;
  requestExtra?: Record<string, z.ZodType>;
  settings?: z.ZodType;
  sourceKinds?: [string, ...string[]];
  roles?: [string, ...string[]];
  parts?: z.ZodDiscriminatedUnion<[typeof textPart, ...(typeof textPart | typeof imagePart)[]]>;
  decision?: z.ZodType;
  headerExtra?: Record<string, z.ZodType>;
  pair?: z.ZodType;
  extraEvent?: boolean;
  seq?: z.ZodType;
}

/** A format shaped like the real ones; each knob changes one thing. */
function format(k: Knobs = {}) {
  const seq = k.seq ?? int;
  const message = z.strictObject({
    seq,
    type: z.literal('message'),
    role: z.enum(k.roles ?? ['user', 'model']),
    content: z.array(k.parts ?? z.discriminatedUnion('kind', [textPart])),
    source: z.strictObject({ kind: z.enum(k.sourceKinds ?? ['client', 'provider']) }).optional(),
    ...(k.messageExtra === undefined ? {} : { extra: k.messageExtra }),
  });
  const request = z.strictObject({
    seq,
    type: z.literal('request'),
    settings: k.settings ?? z.strictObject({ temperature: z.number().optional() }),
    pair: k.pair ?? z.tuple([z.string(), int]),
    ...k.requestExtra,
  });
  const decision = z.strictObject({ seq, type: z.literal('decision'), payload: k.decision ?? payloadV1 });
  const other = z.strictObject({ seq, type: z.literal('other') });
  const events = k.extraEvent === true ? [message, request, decision, other] : [message, request, decision];
  return formatStructure({
    header: z.strictObject({ version: z.literal(4), id: z.string(), ...k.headerExtra }),
    event: z.discriminatedUnion('type', events as [typeof message, typeof request, typeof decision]),
  });
}

function classify(k: Knobs): Comparison {
  return compareStructures(format(), format(k));
}

function only(c: Comparison, kind: Comparison['kind']): Change {
  assert.equal(c.kind, kind, JSON.stringify(c));
  assert.ok(c.kind !== 'same');
  assert.equal(c.changes.length, 1, JSON.stringify(c.changes));
  const first = c.changes[0];
  assert.ok(first !== undefined);
  return first;
}

describe('compareStructures: same', () => {
  test('identical structures, and every real version against itself', () => {
    assert.deepEqual(compareStructures(format(), format()), { kind: 'same' });
    for (const v of [0, 1, 2, 3, 4] as const) {
      assert.deepEqual(compareStructures(formatStructure(formats[v]), formatStructure(formats[v])), {
        kind: 'same',
      });
    }
  });
});

describe('compareStructures: allowed in-version changes', () => {
  test('(a) an optional property added inside an event body', () => {
    const c = only(classify({ messageExtra: z.string().optional() }), 'allowed');
    assert.equal(c.kind, 'optional-property-added');
    assert.equal(c.path, 'event message');
    assert.match(c.message, /^event message: optional property "extra" was added/);
    // also deeper inside an event body
    const deep = only(
      classify({ settings: z.strictObject({ temperature: z.number().optional(), topK: int.optional() }) }),
      'allowed',
    );
    assert.equal(deep.path, 'event request.settings');
  });

  test('(b) a new payload version, higher than all, keeping every earlier variant', () => {
    const c = only(classify({ decision: z.union([payloadV1, payloadV2]) }), 'allowed');
    assert.equal(c.kind, 'payload-version-added');
    assert.equal(c.path, 'event decision.payload');
    const from2 = compareStructures(
      format({ decision: z.union([payloadV1, payloadV2]) }),
      format({ decision: z.union([payloadV2, payloadV1, payloadV3]) }),
    );
    assert.equal(from2.kind, 'allowed');
  });

  test('(c) a source kind added only as an attribution', () => {
    const c = only(classify({ sourceKinds: ['client', 'provider', 'gateway'] }), 'allowed');
    assert.equal(c.kind, 'source-kind-added');
    assert.equal(c.path, 'event message.source.kind');
  });

  for (const v of [4, 5] as const) {
    test(`the real v${v} schema: a new message.source.kind is allowed`, () => {
      const shipped = formatStructure(formats[v]);
      const json = JSON.stringify(shipped).replace(
        '"values":["client","gateway","provider"]',
        '"values":["client","gateway","plugin","provider"]',
      );
      assert.notEqual(json, JSON.stringify(shipped));
      const cmp = compareStructures(shipped, JSON.parse(json) as typeof shipped);
      assert.equal(cmp.kind, 'allowed');
    });
  }

  test('v4 -> v5 is a change that needs a new version (v5 adds a part kind, a role, an event)', () => {
    const cmp = compareStructures(formatStructure(formats[4]), formatStructure(formats[5]), 5);
    assert.equal(cmp.kind, 'breaking');
    const messages = cmp.kind === 'breaking' ? cmp.changes.map((c) => c.message) : [];
    assert.ok(
      messages.some((m) => m.includes('"compaction" was added')),
      messages.join('\n'),
    );
    assert.ok(
      messages.some((m) => m.includes('"other"')),
      messages.join('\n'),
    );
  });
});

describe('compareStructures: breaking changes need a new version', () => {
  const breaking = (k: Knobs, kind: Change['kind'], message: RegExp) => {
    const c = classify(k);
    assert.equal(c.kind, 'breaking', JSON.stringify(c));
    assert.ok(c.kind === 'breaking');
    const hit = c.changes.find((x) => x.kind === kind && !x.allowed);
    assert.ok(hit !== undefined, JSON.stringify(c.changes));
    assert.match(hit.message, message);
    assert.match(hit.message, /: this change needs a new format version \(v6\)$/);
  };

  test('a required property added', () =>
    breaking(
      { messageExtra: z.string() },
      'property-added',
      /^event message: required property "extra" was added/,
    ));
  test('a property became required', () =>
    breaking(
      { settings: z.strictObject({ temperature: z.number() }) },
      'optionality-changed',
      /^event request.settings: property "temperature" became required/,
    ));
  test('a property removed', () =>
    breaking(
      { settings: z.strictObject({}) },
      'property-removed',
      /^event request.settings: property "temperature" was removed/,
    ));
  test('a type change', () =>
    breaking(
      { settings: z.strictObject({ temperature: z.string().optional() }) },
      'type-changed',
      /^event request.settings.temperature: type changed from number to string/,
    ));
  test('an optional property added to the header', () =>
    breaking(
      { headerExtra: { team: z.string().optional() } },
      'property-added',
      /^header: optional property "team" was added outside an event body/,
    ));
  test('a kind of record added', () =>
    breaking({ extraEvent: true }, 'variants-changed', /^event: variant type "other" was added/));
  test('a content part kind added', () =>
    breaking(
      { parts: z.discriminatedUnion('kind', [textPart, imagePart]) },
      'variants-changed',
      /^event message.content\[\]: variant kind "image" was added/,
    ));
  test('an enum value added outside the source kind', () =>
    breaking(
      { roles: ['user', 'model', 'tool'] },
      'enum-changed',
      /^event message.role: enum value\(s\) "tool" added/,
    ));
  test('a source kind removed', () =>
    breaking(
      { sourceKinds: ['client'] },
      'enum-changed',
      /^event message.source.kind: enum value\(s\) "provider" removed/,
    ));
  test('a payload variant changed', () =>
    breaking(
      { decision: z.union([z.strictObject({ payloadVersion: z.literal(1), note: int }), payloadV2]) },
      'type-changed',
      /payloadVersion=1\]\.note: type changed/,
    ));
  test('a payload version not higher than all before', () => {
    const cmp = compareStructures(
      format({ decision: z.union([payloadV1, payloadV3]) }),
      format({ decision: z.union([payloadV1, payloadV2, payloadV3]) }),
    );
    assert.equal(cmp.kind, 'breaking');
    assert.match(JSON.stringify(cmp), /payload version 2 added not higher than 3/);
  });
  test('a payload version removed', () => {
    const cmp = compareStructures(
      format({ decision: z.union([payloadV1, payloadV2]) }),
      format({ decision: z.union([payloadV2, payloadV3]) }),
    );
    assert.equal(cmp.kind, 'breaking');
    assert.match(JSON.stringify(cmp), /payload version 1 was removed/);
  });
  test('tuple reorder and tuple length', () => {
    breaking(
      { pair: z.tuple([int, z.string()]) },
      'type-changed',
      /^event request.pair\[0\]: type changed from string to number/,
    );
    breaking({ pair: z.tuple([z.string(), int, int]) }, 'tuple-changed', /tuple length changed from 2 to 3/);
  });
  test('an index signature change', () =>
    breaking(
      { settings: z.object({ temperature: z.number().optional() }) },
      'index-signature-changed',
      /^event request.settings: unknown-key policy/,
    ));
  test('a constraint change', () =>
    breaking(
      { seq: z.number() },
      'constraints-changed',
      /^event message.seq: constraints of number changed/,
    ));

  test('allowed and breaking together are breaking, listing both', () => {
    const cmp = classify({ messageExtra: z.string().optional(), requestExtra: { x: z.string() } });
    assert.equal(cmp.kind, 'breaking');
    assert.ok(cmp.kind === 'breaking');
    assert.deepEqual(cmp.changes.map((c) => c.allowed).sort(), [false, true]);
  });

  test('nextVersion names the version to start', () => {
    const cmp = compareStructures(format(), format({ messageExtra: z.string() }), 12);
    assert.ok(cmp.kind === 'breaking');
    assert.match(cmp.changes[0]?.message ?? '', /new format version \(v12\)$/);
  });

  test('the real versions differ from each other by breaking changes', () => {
    for (const v of [0, 1, 2, 3] as const) {
      const cmp = compareStructures(
        formatStructure(formats[v]),
        formatStructure(formats[(v + 1) as 1 | 2 | 3 | 4]),
      );
      assert.equal(cmp.kind, 'breaking', `v${v} -> v${v + 1}`);
    }
  });
});
