import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { assertReservedEmpty, ReservedFieldError } from './reserved.ts';
import { requestEvent } from './format/v4.ts';
import { requestEvent as v5RequestEvent } from './format/v5.ts';

const request = {
  seq: 1,
  at: 2,
  type: 'request',
  requestId: 'r',
  format: 'openai',
  provider: 'p',
  model: 'm',
  settings: {},
  tools: [],
};

describe('assertReservedEmpty', () => {
  test('a v4 request that fills notes is refused, whatever the notes hold', () => {
    for (const notes of [[{ callId: 'c', failed: false, content: [] }], [], null, 'x', 0, {}]) {
      assert.throws(
        () => assertReservedEmpty({ ...request, notes }),
        (err: unknown) =>
          err instanceof ReservedFieldError &&
          err.field === 'request.notes' &&
          err.message ===
            'reserved field request.notes must stay empty (retired in v4: a tool result is a message of its own, with role tool)',
      );
      // the v4 schema agrees: the slot only admits absence
      assert.equal(requestEvent.safeParse({ ...request, notes }).success, false);
    }
  });

  test('v5 keeps the slot reserved', () => {
    assert.throws(() => assertReservedEmpty({ ...request, notes: [] }, 5), ReservedFieldError);
    assert.throws(() => assertReservedEmpty({ ...request, notes: [] }), ReservedFieldError);
    assert.equal(v5RequestEvent.safeParse({ ...request, notes: [] }).success, false);
    assert.equal(v5RequestEvent.safeParse({ ...request, format: 'responses' }).success, true);
  });

  test('an empty slot passes', () => {
    assertReservedEmpty(request);
    assertReservedEmpty({ ...request, notes: undefined });
    assert.equal(requestEvent.safeParse(request).success, true);
  });

  test('other event types, other versions and non-events are not concerned', () => {
    assertReservedEmpty({ type: 'message', notes: [1] });
    assertReservedEmpty({ ...request, notes: [1] }, 3);
    assertReservedEmpty({ type: 'constructor', notes: [1] });
    assertReservedEmpty(null);
    assertReservedEmpty('request');
  });
});
