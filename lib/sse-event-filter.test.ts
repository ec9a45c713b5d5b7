import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SseEventFilter } from './sse-event-filter.ts';
import { readSseText } from './sse-reader.ts';

const DROP = 'DROP-ME';
const dropMarked = (event: Buffer) => event.includes(DROP);

/** Feeds `bytes` cut at `cuts` (byte offsets, any order); returns each push's output and the end's. */
function filterChunked(
  bytes: Buffer,
  cuts: number[],
  filter = new SseEventFilter(dropMarked),
): { outs: Buffer[]; all: string } {
  const outs: Buffer[] = [];
  let from = 0;
  for (const at of [...new Set(cuts)].sort((a, b) => a - b)) {
    outs.push(filter.push(bytes.subarray(from, at)));
    from = at;
  }
  outs.push(filter.push(bytes.subarray(from)));
  outs.push(filter.end());
  return { outs, all: Buffer.concat(outs).toString('utf8') };
}

describe('SseEventFilter', () => {
  test('the chosen event is taken out, its blank line with it; every other byte goes on as it came', () => {
    const text = 'data: {"a":1}\n\ndata: DROP-ME\n\n: a comment\n\ndata: [DONE]\n\n';
    const { all } = filterChunked(Buffer.from(text), []);
    assert.equal(all, 'data: {"a":1}\n\n: a comment\n\ndata: [DONE]\n\n');
  });

  test('an event goes on as soon as its blank line has come, not when the stream ends', () => {
    const filter = new SseEventFilter(dropMarked);
    assert.equal(filter.push(Buffer.from('data: one\n')).length, 0, 'held until it ends');
    assert.equal(filter.push(Buffer.from('\ndata: tw')).toString(), 'data: one\n\n');
    assert.equal(filter.push(Buffer.from('o\n\n')).toString(), 'data: two\n\n');
    assert.equal(filter.end().length, 0);
  });

  test('an event past the cap is no candidate: it goes on as it arrives, and the next is judged again', () => {
    const filter = new SseEventFilter(dropMarked, 16);
    const long = `data: ${'x'.repeat(20)}`;
    assert.equal(filter.push(Buffer.from(long)).toString(), long);
    assert.equal(filter.push(Buffer.from(' DROP-ME')).toString(), ' DROP-ME');
    assert.equal(filter.push(Buffer.from('\n\ndata: DROP-ME\n\ndata: b\n\n')).toString(), '\n\ndata: b\n\n');
  });

  test('what follows the last blank line goes on at the end, as it came', () => {
    const { all } = filterChunked(Buffer.from('data: a\n\ndata: DROP-ME'), [12]);
    assert.equal(all, 'data: a\n\ndata: DROP-ME');
  });

  test('a CR last in a chunk: the LF that follows belongs to the same line end', () => {
    for (const cut of [9, 10, 11, 12, 20, 21]) {
      const { all } = filterChunked(Buffer.from('data: a\r\n\r\ndata: DROP-ME\r\n\r\ndata: c\r\r'), [cut]);
      assert.equal(all, 'data: a\r\n\r\ndata: c\r\r', `cut at ${cut}`);
    }
  });

  test('over generated streams, line ends and chunkings: the stream less the chosen events', () => {
    const event = fc.record({
      drop: fc.boolean(),
      lines: fc.array(fc.stringMatching(/^[a-z :{}"[\]]{0,8}$/), { minLength: 1, maxLength: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(event, { maxLength: 8 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.nat({ max: 400 }), { maxLength: 12 }),
        (events, eol, cuts) => {
          // Each line a data line; a dropped event carries the marker.
          const texts = events.map(
            (e) => `${[...e.lines, ...(e.drop ? [DROP] : [])].map((l) => `data: ${l}${eol}`).join('')}${eol}`,
          );
          const bytes = Buffer.from(texts.join(''));
          const expected = texts.filter((_, i) => !events[i]!.drop).join('');
          const { all } = filterChunked(
            bytes,
            cuts.map((c) => c % (bytes.length + 1)),
          );
          assert.equal(all, expected);
          assert.deepEqual(
            readSseText(all),
            readSseText(bytes.toString()).filter((e) => !e.data.includes(DROP)),
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});
