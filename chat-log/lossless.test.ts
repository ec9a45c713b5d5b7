import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { assertLossless, assertLosslessMetadata, LosslessError } from './lossless.ts';
import { OdaError } from '../lib/errors.ts';
import { parseEventLine, prepareBatch } from './event-batch.ts';
import { readLogText } from './convert.ts';
import type { NewEvent } from './format/current.ts';

class Custom {
  x = 1;
}

/** A value that holds `bad` at `events[0].content[1].x`. */
const nested = (bad: unknown) => ({ events: [{ content: [{ t: 1 }, { x: bad }] }] });

function refusedWith(value: unknown, message: string | RegExp): void {
  assert.throws(
    () => assertLossless(value),
    (err: unknown) => {
      assert.ok(err instanceof LosslessError);
      if (typeof message === 'string') assert.equal(err.message, message);
      else assert.match(err.message, message);
      return true;
    },
  );
}

describe('assertLossless', () => {
  test('any JSON value passes and round-trips unchanged', () => {
    fc.assert(
      // fc.jsonValue() may hold -0, which JSON text cannot carry; round-trip it into real JSON first.
      fc.property(
        fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown),
        (v) => {
          assertLossless(v);
          assert.deepStrictEqual(JSON.parse(JSON.stringify(v)), v);
        },
      ),
    );
  });

  test('names the path of the refused value', () => {
    refusedWith(nested(-0), 'value at events[0].content[1].x is negative zero');
    assert.throws(() => assertLossless([{ a: -0 }], 'events'), {
      message: 'value at events[0].a is negative zero',
    });
    refusedWith({ 'a b': NaN }, 'value at ["a b"] is NaN');
  });

  test('refuses negative zero, NaN and infinities anywhere', () => {
    const bad = fc.constantFrom(-0, NaN, Infinity, -Infinity);
    fc.assert(
      fc.property(fc.jsonValue(), bad, fc.nat(), (v, b, at) => {
        // put the bad number somewhere inside an otherwise fine value
        const holder = { items: [v, { deep: [b] }], n: at };
        assert.throws(() => assertLossless(holder), LosslessError);
      }),
    );
    refusedWith(Infinity, 'value is Infinity');
    refusedWith({ n: -Infinity }, 'value at n is -Infinity');
  });

  test('refuses undefined members and a top-level undefined', () => {
    refusedWith({ a: 1, b: undefined }, 'value at b is an undefined member');
    refusedWith([1, undefined], 'value at [1] is an undefined member');
    refusedWith(undefined, 'value is undefined');
  });

  test('refuses sparse arrays and named members of arrays', () => {
    // eslint-disable-next-line no-sparse-arrays
    refusedWith([1, , 3], 'value at [1] is an empty slot of a sparse array');
    refusedWith(new Array(2), 'value at [0] is an empty slot of a sparse array');
    const named = Object.assign([1], { extra: 2 });
    refusedWith(named, 'value at extra is a named member of an array');
  });

  test('refuses non-enumerable, accessor and symbol-keyed members', () => {
    const hidden = Object.defineProperty({ a: 1 }, 'h', { value: 2, enumerable: false });
    refusedWith(hidden, 'value at h is a non-enumerable member');
    const getter = Object.defineProperty({}, 'g', { get: () => 1, enumerable: true });
    refusedWith(getter, 'value at g is an accessor (getter/setter) member');
    refusedWith({ [Symbol('s')]: 1 }, 'value has a symbol-keyed member Symbol(s)');
    const hiddenIndex = Object.defineProperty([1, 2], '0', { value: 1, enumerable: false });
    refusedWith(hiddenIndex, 'value at [0] is a non-enumerable member');
  });

  test('refuses cycles but accepts a shared (acyclic) sub-value', () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = { back: a };
    refusedWith(a, 'value at self.back is a cycle (the value contains itself)');
    const arr: unknown[] = [];
    arr.push(arr);
    refusedWith(arr, /\[0\] is a cycle/);
    const shared = { s: 1 };
    assertLossless({ a: shared, b: shared, c: [shared, shared] });
  });

  test('refuses custom class instances, Dates, Maps, functions, bigint and symbols', () => {
    refusedWith(new Custom(), 'value is an instance of Custom, not a plain object or array');
    refusedWith(nested(new Date(0)), /events\[0\]\.content\[1\]\.x is a Date/);
    refusedWith({ m: new Map() }, 'value at m is an instance of Map, not a plain object or array');
    refusedWith({ u: new Uint8Array(1) }, /u is an instance of Uint8Array/);
    class MyArray extends Array {}
    refusedWith({ arr: new MyArray() }, /arr is an instance of MyArray/);
    refusedWith({ f: () => 1 }, 'value at f is a function');
    refusedWith({ toJSON: () => 'x' }, 'value at toJSON is a function');
    refusedWith({ b: 1n }, 'value at b is a bigint');
    refusedWith({ s: Symbol('x') }, 'value at s is a symbol');
    refusedWith(Object.create({ inherited: 1 }), 'value has a custom prototype, not a plain object or array');
  });

  test('accepts null-prototype objects and JSON-only oddities', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    assertLossless(bare);
    assertLossless(JSON.parse('{"__proto__": {"x": 1}, "s": "\\ud800"}'));
    assertLossless({ big: Number.MAX_VALUE, tiny: Number.MIN_VALUE, zero: 0 });
  });

  test('each refused kind is refused wherever it is nested (property)', () => {
    const refused = fc.constantFrom<() => unknown>(
      () => -0,
      () => NaN,
      () => Infinity,
      () => -Infinity,
      () => undefined,
      () => new Custom(),
      () => new Date(0),
      () => 1n,
      () => Symbol('x'),
      () => () => 1,
    );
    fc.assert(
      fc.property(
        fc.jsonValue(),
        refused,
        fc.array(fc.oneof(fc.string(), fc.nat({ max: 3 })), { maxLength: 4 }),
        (v, make, route) => {
          let holder: unknown = { bad: make() };
          for (const step of route)
            holder = typeof step === 'string' ? { [step]: holder, ok: v } : [v, holder];
          assert.throws(() => assertLossless(holder), LosslessError);
        },
      ),
    );
  });
});

describe('assertLosslessMetadata', () => {
  test('throws the session metadata message with the detail as cause', () => {
    assert.throws(
      () => assertLosslessMetadata({ id: 'a', createdAt: 1, extra: { n: NaN } }),
      (err: unknown) => {
        assert.ok(err instanceof OdaError);
        assert.equal(err.message, 'session metadata must be losslessly JSON-serializable');
        assert.equal(err.status, 400);
        assert.ok(err.cause instanceof LosslessError);
        assert.equal(err.cause.message, 'value at metadata.extra.n is NaN');
        return true;
      },
    );
  });

  test('passes plain metadata', () => {
    assertLosslessMetadata({ id: 'a', createdAt: 0, cwd: '/w', depth: 1 });
  });
});

describe('raw parts (format v5): a block kept as sent', () => {
  /** Any JSON a client can send: parsed from JSON text, as the gateway reads a request body. */
  const sentJson = fc.jsonValue().map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  const sentObject = fc
    .dictionary(fc.string(), fc.jsonValue())
    .map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  const messageWith = (value: unknown, wire?: unknown) => ({
    type: 'message' as const,
    role: 'other' as const,
    content: [
      { kind: 'raw' as const, value },
      {
        kind: 'tool-result' as const,
        callId: 'c',
        failed: false,
        content: [{ kind: 'raw' as const, value }],
      },
    ],
    ...(wire === undefined ? {} : { wire }),
  });

  test('any JSON value passes the check and is stored and read back unchanged', () => {
    fc.assert(
      fc.property(sentJson, sentObject, (value, wire) => {
        const event = messageWith(value, wire);
        assertLossless(event);
        const batch = prepareBatch([event as NewEvent], 0, 1);
        const read = parseEventLine(batch.lines[0]!, 'c', 0);
        assert.deepStrictEqual(read, { seq: 0, at: 1, ...event });
        assert.equal(JSON.stringify(read), batch.lines[0]!);
      }),
    );
  });

  test('a "__proto__" member of a block survives the write and both readers', () => {
    const value = JSON.parse('{"type":"x","__proto__":{"polluted":true},"constructor":1}') as unknown;
    const wire = JSON.parse('{"role":"critic","__proto__":2}') as unknown;
    const batch = prepareBatch([messageWith(value, wire) as NewEvent], 0, 1);
    assert.match(batch.lines[0]!, /"__proto__":\{"polluted":true\}/);
    const read = parseEventLine(batch.lines[0]!, 'c', 0);
    assert.equal(JSON.stringify(read), batch.lines[0]!);
    const log = readLogText(`{"version":5,"id":"c","createdAt":0}\n${batch.lines[0]!}\n`);
    assert.deepEqual(log.problems, []);
    assert.equal(JSON.stringify(log.events[0]), batch.lines[0]!);
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  });

  test('a block holding what JSON text cannot carry back is refused, naming where it sits', () => {
    const value = JSON.parse('{"type":"x","n":-0}') as unknown;
    assert.throws(() => prepareBatch([messageWith(value) as NewEvent], 0, 1), {
      message: 'chat log refused the batch: value at events[0].content[0].value.n is negative zero',
    });
  });
});
