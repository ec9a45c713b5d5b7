/**
 * A long chat's history parsed once: a body whose message list repeats an earlier body's elements
 * byte for byte gets copies of their parse, and what it gets is always what JSON.parse gives, however
 * the earlier request changed its own copies.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PIECEWISE_FROM, parseJsonBody } from './json-body.ts';
import { DEFAULT_JSON_LIMITS, JsonShapeScan } from './json-limits.ts';
import { copyJson, ParsedLists } from './parsed-lists.ts';

const LIMITS = { ...DEFAULT_JSON_LIMITS, maxMessages: 1e6, maxValues: 1e9, maxImages: 1e6 };
const PAD = 'x'.repeat(PIECEWISE_FROM);

/** A request body as a client writes it: the list, then a member long enough for the pieces road. */
function bodyOf(list: readonly unknown[], indent?: number | string): Buffer {
  const text = `{"model":"m","messages":${JSON.stringify(list, null, indent)},"pad":"${PAD}"}`;
  return Buffer.from(text, 'utf8');
}

function parse(buf: Buffer, lists: ParsedLists): Record<string, unknown> {
  const scan = new JsonShapeScan(buf, LIMITS);
  scan.step(buf.length);
  assert.equal(scan.exceeded, undefined);
  return parseJsonBody(buf, scan, lists).body;
}

/** Equal to JSON.parse's value: the same values (deepStrictEqual: -0, types) and keys in order. */
function assertAsParsed(got: unknown, buf: Buffer): void {
  const want: unknown = JSON.parse(buf.toString('utf8'));
  assert.deepStrictEqual(got, want);
  assert.equal(JSON.stringify(got), JSON.stringify(want));
}

/** Changes every object and array inside `value` the ways a request's mechanisms could. */
function scribble(value: unknown): void {
  if (Array.isArray(value)) {
    for (const v of value) scribble(v);
    value.push('added');
    value[0] = 'replaced';
  } else if (typeof value === 'object' && value !== null) {
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      scribble(obj[key]);
      if (key.length % 2 === 0) delete obj[key];
      else obj[key] = 'edited';
    }
    obj.cache_control = { type: 'ephemeral' };
  }
}

const message = fc.jsonValue({ maxDepth: 4 });

describe('large bodies whose message list repeats an earlier one', () => {
  test('give what JSON.parse gives, turn after turn, however each turn changed its own copies', () => {
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 10 }),
        fc.array(fc.array(message, { maxLength: 3 }), { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.constantFrom(undefined, 1, '\t'),
        fc.boolean(),
        (first, added, changeAt, indent, scribbled) => {
          const lists = new ParsedLists();
          let list = first;
          let buf = bodyOf(list, indent);
          let body = parse(buf, lists);
          assertAsParsed(body, buf);
          for (const more of added) {
            if (scribbled) scribble(body.messages);
            // Now and then an element of the history is not what it was (a client's edit).
            const changed = [...list, ...more];
            if (changeAt % 3 === 0 && changed.length > 1)
              changed[1 + (changeAt % (changed.length - 1))] = { edited: changeAt };
            list = changed;
            buf = bodyOf(list, indent);
            body = parse(buf, lists);
            assertAsParsed(body, buf);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  test('copies the elements whose bytes are the same and parses the rest', () => {
    const lists = new ParsedLists();
    const history = Array.from({ length: 20 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: [{ type: 'text', text: `turn ${i} ` + 'é😀'.repeat(i) }],
    }));
    const first = bodyOf(history);
    const got1 = parse(first, lists);
    assert.deepEqual([lists.copied, lists.parsed], [0, 20]);
    // The gateway's own edits of the first request's copies.
    (got1.messages as Array<{ content: Array<Record<string, unknown>> }>)[19]!.content[0]!.cache_control = {
      type: 'ephemeral',
    };
    (got1.messages as Array<{ content: unknown[] }>)[3]!.content.length = 0;
    const next = [...history, { role: 'assistant', content: 'answer' }, { role: 'user', content: 'go on' }];
    const second = bodyOf(next);
    const got2 = parse(second, lists);
    assert.deepEqual([lists.copied, lists.parsed], [20, 22]);
    // The resent history lies where it lay, relative to the list: one comparison proves all 20.
    assert.equal(lists.compared, 1);
    assertAsParsed(got2, second);
    // Copies, not the kept values: neither request's objects are the other's.
    const m1 = got1.messages as unknown[];
    const m2 = got2.messages as unknown[];
    for (let i = 0; i < 20; i++) assert.notEqual(m2[i], m1[i]);

    // One element with other bytes of the same length (a client that changed a character).
    const edited = next.map((m, i) =>
      i === 5 ? { ...m, content: [{ type: 'text', text: 'turn 6 ' + 'é😀'.repeat(5) }] } : m,
    );
    const third = bodyOf(edited);
    assert.equal(third.length, second.length);
    const got3 = parse(third, lists);
    assert.deepEqual([lists.copied, lists.parsed], [20 + 21, 22 + 1]);
    // The span of the 22 remembered elements differs: each is then compared on its own.
    assert.equal(lists.compared, 1 + 1 + 22);
    assertAsParsed(got3, third);

    // Other spacing: no element has the same bytes; another first element: another list.
    parse(bodyOf(next, 2), lists);
    assert.deepEqual([lists.copied, lists.parsed], [41, 23 + 22]);
    parse(bodyOf([{ role: 'user', content: 'another chat' }, ...next.slice(1)]), lists);
    assert.deepEqual([lists.copied, lists.parsed], [41, 45 + 22]);
  });

  test('a history moved within the body, or with a message of another length, takes few comparisons', () => {
    const lists = new ParsedLists();
    const history = Array.from({ length: 30 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `m${i}`,
    }));
    parse(bodyOf(history), lists);
    // Another model name before the list: every element lies elsewhere in the body, in the same
    // places relative to the list's first one.
    const moved = Buffer.from(
      `{"model":"a longer model name","messages":${JSON.stringify(history)},"pad":"${PAD}"}`,
    );
    assertAsParsed(parse(moved, lists), moved);
    assert.deepEqual([lists.copied, lists.parsed, lists.compared], [30, 30, 1]);
    // Message 10 grew by a character: 0-9 are proven together, 10 (another length, not compared)
    // is parsed again, 11-29 (shifted by one byte) are compared one by one and copied.
    const grown = history.map((m, i) => (i === 10 ? { ...m, content: 'm10!' } : m));
    const buf = bodyOf(grown);
    assertAsParsed(parse(buf, lists), buf);
    assert.deepEqual([lists.copied, lists.parsed, lists.compared], [30 + 29, 31, 1 + 1 + 19]);
  });

  test('two requests in flight with the same history get copies of their own', () => {
    const lists = new ParsedLists();
    const history = [
      { role: 'user', content: [{ type: 'text', text: 'a' }] },
      { role: 'assistant', content: 'b' },
    ];
    parse(bodyOf(history), lists);
    const buf = bodyOf([...history, { role: 'user', content: 'c' }]);
    const a = parse(buf, lists);
    const b = parse(buf, lists);
    scribble(a);
    assertAsParsed(b, buf);
    assertAsParsed(parse(buf, lists), buf);
  });

  test('a __proto__ key stays an own property of the copy', () => {
    const lists = new ParsedLists();
    const text = (extra: string) =>
      Buffer.from(
        `{"messages":[{"__proto__":{"polluted":true},"role":"user"}${extra}],"pad":"${PAD}"}`,
        'utf8',
      );
    parse(text(''), lists);
    const got = parse(text(',{"role":"assistant"}'), lists);
    assert.equal(lists.copied, 1);
    const first = (got.messages as Array<Record<string, unknown>>)[0]!;
    assert.ok(Object.hasOwn(first, '__proto__'));
    assert.equal(Object.getPrototypeOf(first), Object.prototype);
    assert.equal((first as { polluted?: boolean }).polluted, undefined);
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
    assertAsParsed(got, text(',{"role":"assistant"}'));
  });

  test('keeps at most its budget of bodies, the least recently used list going first', () => {
    const one = bodyOf([{ role: 'user', content: 'chat one' }]);
    const budget = Math.floor(one.length * 2.5);
    const lists = new ParsedLists(budget);
    parse(one, lists);
    parse(bodyOf([{ role: 'user', content: 'chat two' }]), lists);
    assert.equal(lists.heldBytes, one.length * 2);
    // The same chat again replaces its list; a third chat then pushes the least recent out.
    parse(
      bodyOf([
        { role: 'user', content: 'chat one' },
        { role: 'assistant', content: 'x' },
      ]),
      lists,
    );
    assert.equal(lists.copied, 1);
    parse(bodyOf([{ role: 'user', content: 'chat 3!' }]), lists);
    assert.ok(lists.heldBytes <= budget);
    const copied = lists.copied;
    parse(bodyOf([{ role: 'user', content: 'chat one' }]), lists);
    assert.equal(lists.copied, copied + 1, 'chat one was kept');
    parse(bodyOf([{ role: 'user', content: 'chat two' }]), lists);
    assert.equal(lists.copied, copied + 1, 'chat two was the least recently used and was let go');
    // A body over the whole budget is parsed and not kept.
    const small = new ParsedLists(one.length - 1);
    parse(one, small);
    assertAsParsed(parse(one, small), one);
    assert.deepEqual([small.heldBytes, small.copied], [0, 0]);
  });

  test('copyJson copies objects and arrays and keeps every value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = copyJson(value);
        assert.deepStrictEqual(copy, value);
        assert.equal(JSON.stringify(copy), JSON.stringify(value));
        if (typeof value === 'object' && value !== null) assert.notEqual(copy, value);
      }),
    );
  });
});
