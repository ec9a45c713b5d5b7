import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exceededJsonLimit } from './json-limits.ts';

const check = (text: string, maxDepth = 3, maxValues = 10) =>
  exceededJsonLimit(Buffer.from(text, 'utf8'), { maxDepth, maxValues });

test('depth counts arrays and objects, not brackets inside strings or after escapes', () => {
  assert.equal(check('[[[1]]]'), undefined);
  assert.equal(check('[[[[1]]]]'), 'depth');
  assert.equal(check('{"a":{"b":{"c":1}}}'), undefined);
  assert.equal(check('{"a":{"b":{"c":{}}}}'), 'depth');
  assert.equal(check('["[[[[[[", "{{{{{{"]'), undefined);
  assert.equal(check('["\\"[[[[[[", "\\\\", "]]]]"]'), undefined);
  assert.equal(check('[[],[],[],[]]'), undefined, 'siblings do not add up');
  assert.equal(check('['.repeat(100_000), 256, 1_000_000), 'depth', 'unterminated nesting stops early');
  assert.equal(
    check('["a\\\\", [[[[1]]]]]'),
    'depth',
    'an even run of backslashes does not escape the quote',
  );
  assert.equal(check(String.raw`["a\"[[[[", 1]`), undefined, 'an odd run does');
});

test('values count containers and separators', () => {
  assert.equal(check('[1,2,3,4,5,6,7,8,9]'), undefined);
  assert.equal(check('[1,2,3,4,5,6,7,8,9,10,11,12]'), 'values');
  assert.equal(check('{"a":"x,y,z,w,v,u,t,s,r,q,p,o"}'), undefined, 'commas in strings are text');
  assert.equal(check('[{},{},{},{},{},{}]'), 'values');
});

test('malformed text is left to JSON.parse', () => {
  assert.equal(check(']]]]]'), undefined);
  assert.equal(check('"unterminated'), undefined);
  assert.equal(check('not json at all'), undefined);
});

// Not a speed measurement (those are in the benchmarks): the bound is about 100 times what the scan
// takes on a 2-core machine, so only a scan that is no longer linear (one that rescans) fails it.
test('scanning 50 MB stays linear: far under 10 s', () => {
  const big = Buffer.from(
    JSON.stringify({ text: 'x'.repeat(25_000_000), list: Array.from({ length: 2_000_000 }, () => 1) }),
  );
  const started = performance.now();
  assert.equal(exceededJsonLimit(big, { maxDepth: 256, maxValues: 10_000_000 }), undefined);
  assert.ok(performance.now() - started < 10_000, `${Math.round(performance.now() - started)} ms`);
});

const shape = (value: unknown, maxMessages = 3, maxImages = 2) =>
  exceededJsonLimit(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value), 'utf8'), {
    maxDepth: 64,
    maxValues: 1_000_000,
    maxMessages,
    maxImages,
  });

test('messages: the elements of the top-level messages or input array, nothing nested', () => {
  const m = (n: number) =>
    Array.from({ length: n }, () => ({ role: 'user', content: [{ type: 'text', text: 'a,b' }] }));
  assert.equal(shape({ model: 'x', messages: m(3) }), undefined);
  assert.equal(shape({ model: 'x', messages: m(4) }), 'messages');
  assert.equal(shape({ model: 'x', input: m(4) }), 'messages', 'Responses input items');
  assert.equal(shape({ model: 'x', input: 'just, a, string, with, commas' }), undefined);
  assert.equal(shape({ model: 'x', messages: [] }), undefined);
  assert.equal(shape({ model: 'x', messages: [1, 2, 3, 4] }), 'messages', 'any element counts');
  assert.equal(shape({ metadata: { messages: m(10) }, messages: m(1) }), undefined, 'only the top level');
  assert.equal(shape({ tools: [{ input: m(10) }] }), undefined);
  assert.equal(shape('{"messages" : [ {} , {} , {} , {} ] }'), 'messages', 'whitespace anywhere');
  assert.equal(shape('{"mess\\u0061ges":[{},{},{},{}]}'), 'messages', 'an escaped key is the same key');
  assert.equal(shape({ messages: m(2), input: m(3) }), undefined);
  assert.equal(shape({ messages: m(2), input: m(4) }), 'messages');
});

test('images: parts whose type is an image type, in every format and anywhere in the body', () => {
  const anthropic = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } };
  const openai = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } };
  const responses = { type: 'input_image', image_url: 'data:image/png;base64,AAAA' };
  const screenshot = { type: 'computer_screenshot', image_url: 'data:image/png;base64,AAAA' };
  assert.equal(shape({ messages: [{ role: 'user', content: [anthropic, anthropic] }] }), undefined);
  assert.equal(shape({ messages: [{ role: 'user', content: [anthropic, openai, responses] }] }), 'images');
  assert.equal(
    shape({
      messages: [
        { role: 'user', content: [{ type: 'tool_result', content: [anthropic, anthropic, anthropic] }] },
      ],
    }),
    'images',
    'inside tool results',
  );
  assert.equal(
    shape({ input: [{ type: 'computer_call_output', output: screenshot }, responses, responses] }),
    'images',
  );
  assert.equal(
    shape({
      messages: [
        { role: 'user', content: [{ type: 'text', text: '"type":"image" "type":"image" "type":"image"' }] },
      ],
    }),
    undefined,
    'text that looks like an image part is text',
  );
  assert.equal(
    shape({
      messages: [
        { role: 'user', content: [{ kind: 'image' }, { type: { type: 'x' } }, { type: ['image'] }] },
      ],
    }),
    undefined,
  );
  assert.equal(
    shape('[{"ty\\u0070e":"image"},{"type":"im\\u0061ge"},{"type":"image"}]'),
    'images',
    'escapes do not hide them',
  );
});
