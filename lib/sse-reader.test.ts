import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readSseText, SseReader } from './sse-reader.ts';

type SseEvent = { event: string | undefined; data: string };

/** Feeds `bytes` cut at `cuts` (byte offsets, any order) and returns the events read. */
function readChunked(bytes: Uint8Array, cuts: number[]): SseEvent[] {
  const events: SseEvent[] = [];
  const reader = new SseReader((event, data) => events.push({ event, data }));
  let from = 0;
  for (const at of [...new Set(cuts)].sort((a, b) => a - b)) {
    reader.push(bytes.subarray(from, at));
    from = at;
  }
  reader.push(bytes.subarray(from));
  reader.end();
  return events;
}

/**
 * The SSE spec's reading of a whole text, line by line (the model the reader must match), except
 * that an event with a name and no data is reported too, as the reader always has.
 */
function specEvents(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  let event: string | undefined;
  let data: string[] = [];
  const flush = () => {
    if (data.length > 0 || (event !== undefined && event !== ''))
      events.push({ event, data: data.join('\n') });
    event = undefined;
    data = [];
  };
  for (const line of text.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/)) {
    if (line === '') flush();
    else if (!line.startsWith(':')) {
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
  }
  flush();
  return events;
}

describe('SseReader', () => {
  const cases: Array<[string, string, SseEvent[]]> = [
    [
      'LF, CRLF and lone CR line ends',
      'data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d\n\n',
      ['a', 'b', 'c', 'd'].map((data) => ({ event: undefined, data })),
    ],
    [
      'a blank line written with another line end than the line before it',
      'data: a\r\n\ndata: b\n\r\ndata: c\n\rdata: d\r\r\n',
      ['a', 'b', 'c', 'd'].map((data) => ({ event: undefined, data })),
    ],
    [
      'event names, multi-line data, comments, a field without colon, one leading space taken',
      ': OPENROUTER PROCESSING\n\nevent: message_start\ndata: {"a":1}\ndata:  two\ndata\n\n',
      [{ event: 'message_start', data: '{"a":1}\n two\n' }],
    ],
    [
      'a last event without a blank line after it',
      'data: a\n\ndata: [DONE]',
      [
        { event: undefined, data: 'a' },
        { event: undefined, data: '[DONE]' },
      ],
    ],
    ['an event with a name and no data', 'event: ping\n\n', [{ event: 'ping', data: '' }]],
    ['only comments and blank lines', ': keep-alive\n\n\n\n', []],
  ];
  for (const [name, text, expected] of cases) {
    test(`${name}: read whole and byte by byte`, () => {
      assert.deepEqual(readSseText(text), expected);
      const bytes = Buffer.from(text, 'utf8');
      const everyByte = Array.from({ length: bytes.length }, (_, i) => i);
      assert.deepEqual(readChunked(bytes, everyByte), expected);
    });
  }

  test('a CRLF split between chunks is one line end; a multi-byte character split is one character', () => {
    const bytes = Buffer.from('data: é😀\r\n\r\ndata: b\r\n\r\n', 'utf8');
    const crAt = bytes.indexOf(13);
    assert.deepEqual(readChunked(bytes, [7, 9, crAt + 1, crAt + 3]), [
      { event: undefined, data: 'é😀' },
      { event: undefined, data: 'b' },
    ]);
  });

  test('a long line arriving in many chunks is one event', () => {
    const long = 'x'.repeat(1 << 20);
    const bytes = Buffer.from(`data: ${long}\n\ndata: next\n\n`, 'utf8');
    const cuts = Array.from({ length: Math.floor(bytes.length / 1000) }, (_, i) => (i + 1) * 1000);
    const events = readChunked(bytes, cuts);
    assert.equal(events.length, 2);
    assert.equal(events[0]!.data, long);
    assert.equal(events[1]!.data, 'next');
  });

  test('any chunking of any text gives the events the spec reads from the whole text', () => {
    const lineEnd = fc.constantFrom('\n', '\r', '\r\n');
    const value = fc.string({ maxLength: 8, unit: 'grapheme' }).map((s) => s.replace(/[\r\n]/g, ''));
    const line = fc.oneof(
      fc.constant(''),
      fc
        .tuple(fc.constantFrom('data', 'data:', 'data: ', 'event:', 'event: ', ':', 'id: ', 'x'), value)
        .map(([field, v]) => field + v),
    );
    const text = fc
      .array(fc.tuple(line, lineEnd), { maxLength: 20 })
      .chain((lines) =>
        fc.tuple(fc.constant(lines.map(([l, end]) => l + end).join('')), fc.oneof(fc.constant(''), line)),
      )
      .map(([body, tail]) => body + tail);
    fc.assert(
      fc.property(
        text.chain((t) => {
          const size = Buffer.byteLength(t, 'utf8');
          return fc.tuple(fc.constant(t), fc.array(fc.integer({ min: 0, max: size }), { maxLength: 12 }));
        }),
        ([t, cuts]) => {
          const expected = specEvents(t);
          assert.deepEqual(readSseText(t), expected);
          assert.deepEqual(readChunked(Buffer.from(t, 'utf8'), cuts), expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('SseReader with maxEventChars', () => {
  test('an event past the bound is dropped as it arrives and reported; the events around it are read', () => {
    const events: SseEvent[] = [];
    let oversize = 0;
    const reader = new SseReader((event, data) => events.push({ event, data }), {
      maxEventChars: 100,
      onOversize: () => oversize++,
    });
    const big = 'x'.repeat(500);
    // The long line comes in many small chunks, and as several data lines of one event.
    const text = `data: before\n\ndata: ${big}\n\ndata: ${'y'.repeat(60)}\ndata: ${'y'.repeat(60)}\n\nevent: done\ndata: after\n\n`;
    const bytes = Buffer.from(text);
    for (let i = 0; i < bytes.length; i += 7) reader.push(bytes.subarray(i, i + 7));
    reader.end();
    assert.deepEqual(events, [
      { event: undefined, data: 'before' },
      { event: 'done', data: 'after' },
    ]);
    assert.equal(oversize, 2);
  });
});
