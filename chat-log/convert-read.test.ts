// readLogText: every format version read through its own schema; broken headers, torn and invalid
// lines, sequence gaps and reserved fields reported.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readLogText } from './convert.ts';
import { formats, VERSIONS, type FormatVersion } from './format/index.ts';
import { fixtureText } from './test-convert-fixtures.ts';

describe('readLogText', () => {
  for (const v of VERSIONS) {
    test(`fixture v${v} reads through its own schema without problems`, () => {
      const text = fixtureText(v);
      const read = readLogText(text);
      assert.equal(read.version, v);
      assert.deepEqual(read.problems, []);
      const lines = text.trimEnd().split('\n');
      assert.ok(read.events.length >= 8, 'several events');
      assert.equal(read.events.length, lines.length - 1);
      formats[v].header.parse(read.header);
      for (const e of read.events) formats[v].event.parse(e);
    });
  }

  test('each older fixture is refused by the next version schema (the versions really differ)', () => {
    for (const v of [0, 1, 2, 3] as const) {
      const read = readLogText(fixtureText(v));
      const next = formats[(v + 1) as FormatVersion];
      const refused = read.events.some((e) => !next.event.safeParse(e).success);
      assert.ok(refused || !next.header.safeParse(read.header).success, `v${v} differs from v${v + 1}`);
    }
  });

  test('an unknown version is refused', () => {
    for (const [v, shown] of [
      [6, '6'],
      [-1, '-1'],
      ['4', '"4"'],
      [null, 'null'],
    ] as const) {
      assert.throws(() => readLogText(`${JSON.stringify({ version: v, id: 'x', createdAt: 0 })}\n`), {
        message: `unsupported chat log format version ${shown}; this build reads versions 0 to 5`,
      });
    }
    assert.throws(() => readLogText('{"id":"x","createdAt":0}\n'), {
      message: 'unsupported chat log format version undefined; this build reads versions 0 to 5',
    });
  });

  test('a missing or broken header is refused; header checks keep their messages', () => {
    assert.throws(() => readLogText(''), { message: 'chat log has no header line' });
    assert.throws(() => readLogText('{"version":4,'), /header \(line 1\) is not valid JSON/);
    assert.throws(() => readLogText('{"version":2,"id":3,"createdAt":0}\n'), {
      message: 'id must be a string',
    });
    assert.throws(() => readLogText('{"version":2,"id":"a","createdAt":0,"cwd":"rel"}\n'), {
      message: 'cwd must be absolute',
    });
    assert.throws(
      () => readLogText('{"version":0,"id":"a","createdAt":0,"cwd":"/x"}\n'),
      /unknown field "cwd"/,
    );
  });

  test('a torn last line is reported and never merged', () => {
    const text = fixtureText(4);
    const lines = text.trimEnd().split('\n');
    const torn = `${lines.slice(0, -1).join('\n')}\n${(lines.at(-1) ?? '').slice(0, 25)}`;
    const read = readLogText(torn);
    assert.equal(read.events.length, lines.length - 2);
    assert.deepEqual(
      read.problems.map((p) => [p.line, p.kind]),
      [[lines.length, 'torn-line']],
    );
    // a complete last line without its newline is kept
    assert.equal(readLogText(text.trimEnd()).events.length, lines.length - 1);
    assert.deepEqual(readLogText(text.trimEnd()).problems, []);
  });

  test('invalid lines are reported with their line numbers and left out', () => {
    const lines = fixtureText(4).trimEnd().split('\n');
    lines[2] = '{"seq":1,"at":1,"type":"request"}';
    lines[3] = 'not json';
    lines[5] = '{"seq":4,"at":-0,"type":"message","role":"user","content":[]}';
    const read = readLogText(`${lines.join('\n')}\n`);
    assert.deepEqual(
      read.problems.map((p) => [p.line, p.kind]),
      [
        [3, 'invalid-event'],
        [4, 'invalid-json'],
        [6, 'not-lossless'],
      ],
    );
    assert.match(read.problems[0]?.message ?? '', /^line 3: invalid request event \(v4\): requestId: /);
    assert.equal(read.events.length, lines.length - 4);
  });

  test('non-contiguous sequence numbers are reported', () => {
    const lines = fixtureText(0).trimEnd().split('\n');
    lines.splice(3, 1);
    const read = readLogText(`${lines.join('\n')}\n`);
    assert.deepEqual(read.problems, [
      { line: 4, kind: 'seq-gap', message: 'line 4: seq 3 where 2 was expected' },
    ]);
  });

  test('a v4 request event with notes is refused when read', () => {
    const lines = fixtureText(4).trimEnd().split('\n');
    const req = JSON.parse(lines[2] ?? '') as Record<string, unknown>;
    assert.equal(req.type, 'request');
    lines[2] = JSON.stringify({ ...req, notes: [{ callId: 'c1', failed: false, content: [] }] });
    const read = readLogText(`${lines.join('\n')}\n`);
    assert.deepEqual(read.problems, [
      {
        line: 3,
        kind: 'reserved-field',
        message:
          'line 3: reserved field request.notes must stay empty (retired in v4: a tool result is a message of its own, with role tool)',
      },
    ]);
    assert.ok(!read.events.some((e) => e.seq === 1));
    // the same notes in a v3 log are data, not a reserved slot
    assert.deepEqual(readLogText(fixtureText(3)).problems, []);
  });
});
