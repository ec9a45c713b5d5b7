import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { batchBytes, checkBatch, prepareBatch } from './event-batch.ts';
import { isPlainJson } from './lossless.ts';
import { isOdaError } from '../lib/errors.ts';
import type { NewEvent } from './format/current.ts';

const message = (content: unknown): NewEvent =>
  ({ type: 'message', role: 'user', content, source: { kind: 'client' } }) as NewEvent;
const request = (settings: Record<string, unknown>): NewEvent =>
  ({
    type: 'request',
    requestId: 'r1',
    format: 'openai',
    provider: 'p',
    model: 'm',
    settings,
    tools: [],
  }) as NewEvent;

/** The OdaError a prepareBatch (or checkBatch) call throws, or undefined. */
function refusal(
  events: NewEvent[],
  built: boolean,
  prepare: (events: NewEvent[], firstSeq: number, at: number, built: boolean) => unknown = prepareBatch,
): { status: number; message: string } | undefined {
  try {
    prepare(events, 0, 1000, built);
    return undefined;
  } catch (err) {
    assert.ok(isOdaError(err), String(err));
    return { status: err.status, message: err.message };
  }
}

describe('isPlainJson: the quick lossless check', () => {
  test('parsed JSON passes, whatever its shape', () => {
    const parsed: unknown = JSON.parse(
      '{"a":[1,2.5,-3,"x",true,null,{"b":{"c":[]}}],"__proto__":{"d":1},"e":"","f":1e300}',
    );
    assert.equal(isPlainJson(parsed), true);
    assert.equal(isPlainJson(Object.create(null)), true);
  });

  const bad: Array<[string, unknown]> = [
    ['negative zero', { t: -0 }],
    ['a parsed 1e400 (Infinity)', JSON.parse('{"t":1e400}')],
    ['NaN', [NaN]],
    ['an undefined member', { a: undefined }],
    ['an undefined element', [undefined]],
    ['a hole', [1, , 3]], // eslint-disable-line no-sparse-arrays
    ['a Date', { at: new Date(0) }],
    ['a class instance', { m: new Map() }],
    ['a function', { f: () => 1 }],
    ['a bigint', { n: 1n }],
    ['a symbol', { s: Symbol('x') }],
    ['a sub-array with a custom prototype', { a: Object.setPrototypeOf([], {}) }],
  ];
  for (const [what, value] of bad) {
    test(`${what} sends the value to the full check`, () => assert.equal(isPlainJson(value), false));
  }
});

describe('prepareBatch of events the gateway built', () => {
  test('gives the same lines as the validated path for valid events', () => {
    const events = [message([{ kind: 'text', text: 'hi ☃' }]), request({ temperature: 0.5, n: 1 })];
    assert.deepEqual(prepareBatch(events, 3, 1000, true), prepareBatch(events, 3, 1000, false));
  });

  const refused: Array<[string, NewEvent, RegExp]> = [
    [
      'a client -0 in the settings',
      request({ temperature: -0 }),
      /events\[0\]\.settings\.temperature is negative zero/,
    ],
    ['a client 1e400', request(JSON.parse('{"max_tokens":1e400}') as Record<string, unknown>), /is Infinity/],
    ['an undefined member', message([{ kind: 'text', text: undefined }]), /is an undefined member/],
    ['a Date', request({ at: new Date(0) }), /is a Date/],
  ];
  for (const [what, event, why] of refused) {
    test(`refuses ${what} with the full check's message, as the validated path does`, () => {
      const built = refusal([event], true);
      assert.ok(built, 'refused');
      assert.equal(built.status, 400);
      assert.match(built.message, why);
      assert.deepEqual(built, refusal([event], false));
    });
    test(`checkBatch (the slices' first pass) refuses ${what} with prepareBatch's error, built or not`, () => {
      const batch = [message([{ kind: 'text', text: 'fine' }]), event];
      for (const built of [true, false]) {
        const prepared = refusal(batch, built);
        assert.ok(prepared, 'refused');
        assert.match(prepared.message, /events\[1\]/);
        assert.deepEqual(refusal(batch, built, checkBatch), prepared);
      }
    });
  }

  test('checkBatch passes what prepareBatch passes, and writes nothing', () => {
    const events = [message([{ kind: 'text', text: 'hi' }]), request({ temperature: 0.5 })];
    assert.equal(refusal(events, true, checkBatch), undefined);
    assert.equal(refusal(events, false, checkBatch), undefined);
    // A schema error (not only a lossless one) is found by the validated path of both.
    const broken = [{ type: 'message', role: 'user', content: 'not a list' } as unknown as NewEvent];
    const prepared = refusal(broken, false);
    assert.ok(prepared && prepared.status === 500, 'refused by the schema');
    assert.deepEqual(refusal(broken, false, checkBatch), prepared);
  });
});

describe('batchBytes: the lines of a batch as a JSONL file', () => {
  test('is the UTF-8 of the lines joined by newlines, after the first line, for any text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', maxLength: 200 }), { maxLength: 8 }),
        fc.string({ unit: 'binary', maxLength: 40 }),
        (texts, head) => {
          const batch = prepareBatch(
            texts.map((text) => message([{ kind: 'text', text }])),
            0,
            1000,
            true,
          );
          const first = head === '' ? '' : `${JSON.stringify({ head })}\n`;
          const expected = Buffer.from(first + batch.lines.map((l) => `${l}\n`).join(''), 'utf8');
          const got = batchBytes(batch, first);
          assert.ok(got.equals(expected));
          // Each line's recorded length is where the next one starts.
          let at = Buffer.byteLength(first);
          batch.lineBytes.forEach((n, i) => {
            assert.equal(got.subarray(at, at + n).toString('utf8'), `${batch.lines[i]}\n`);
            at += n;
          });
          assert.equal(at, got.length);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('an empty batch is the first line alone', () => {
    const empty = prepareBatch([], 0, 1000, true);
    assert.equal(batchBytes(empty).length, 0);
    assert.equal(batchBytes(empty, '{"v":1}\n').toString(), '{"v":1}\n');
  });
});
