import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, writeFile, rm, stat, readdir, copyFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { readLogText, upgradeToCurrent, convertFileBeside, besidePath, logToText } from './convert.ts';
import { formats, VERSIONS, type FormatVersion } from './format/index.ts';
import { event as currentEvent, header as currentHeader, type Event } from './format/current.ts';
import { CURRENT_VERSION } from './format/index.ts';
import { toolDefinitionDigest } from './format/upgrade-steps.ts';

const fixture = (v: FormatVersion) => new URL(`./__fixtures__/v${v}.jsonl`, import.meta.url).pathname;
const fixtureText = (v: FormatVersion) => readFileSync(fixture(v), 'utf8');

function convert(v: FormatVersion) {
  const read = readLogText(fixtureText(v));
  return upgradeToCurrent(read.version, read.header, read.events);
}

function assertValidCurrent(events: readonly Event[]): void {
  events.forEach((e, i) => {
    assert.equal(e.seq, i, 'contiguous seq from 0');
    currentEvent.parse(e);
  });
}

type Msg = Extract<Event, { type: 'message' }>;
const messages = (events: readonly Event[]) => events.filter((e): e is Msg => e.type === 'message');

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

describe('upgradeToCurrent', () => {
  test('every fixture converts to a valid current (v5) log', () => {
    for (const v of VERSIONS) {
      const log = convert(v);
      currentHeader.parse(log.header);
      assert.equal(log.header.version, CURRENT_VERSION);
      assert.equal(log.header.id, `fixture-v${v}`);
      assertValidCurrent(log.events);
      assert.doesNotThrow(() => readLogText(logToText(log)));
      assert.deepEqual(readLogText(logToText(log)).problems, []);
    }
  });

  test('v5 converts to itself', () => {
    const read = readLogText(fixtureText(5));
    assert.deepEqual(convert(5), { header: read.header, events: read.events });
  });

  test('v4 -> v5 changes only the version number', () => {
    const read = readLogText(fixtureText(4));
    assert.equal(read.version, 4);
    assert.deepEqual(read.problems, []);
    const log = convert(4);
    assert.deepEqual(log, { header: { ...read.header, version: 5 }, events: read.events });
    // and the text differs from the v4 file only in the header's version
    const [head, ...rest] = logToText(log).split('\n');
    const [v4Head, ...v4Rest] = fixtureText(4).split('\n');
    assert.deepEqual(rest, v4Rest);
    assert.equal(head, v4Head?.replace('{"version":4,', '{"version":5,'));
  });

  test('v0: assistant becomes model, strings become text parts, requests get tools and timing', () => {
    const log = convert(0);
    assert.equal(log.events.length, 8);
    const [sys, , , , answer] = log.events;
    assert.deepEqual(sys, {
      seq: 0,
      at: 1700000000010,
      type: 'message',
      role: 'system',
      content: [{ kind: 'text', text: 'You are terse.' }],
    });
    assert.deepEqual(answer, {
      seq: 4,
      at: 1700000000901,
      type: 'message',
      role: 'model',
      content: [{ kind: 'text', text: 'Paris.' }],
    });
    const responses = log.events.filter((e) => e.type === 'response');
    assert.deepEqual(
      responses.map((r) => [r.startedAt, r.attempts, r.latencyMs, r.ok]),
      [
        [1700000000030, 1, 870, true],
        [1700000002010, 1, 490, false],
      ],
    );
    const requests = log.events.filter((e) => e.type === 'request');
    assert.deepEqual(
      requests.map((r) => r.tools),
      [[], []],
    );
  });

  test('v1: the note becomes a tool message after the call; tools become name + digest', () => {
    const log = convert(1);
    assert.deepEqual(
      log.events.map((e) => (e.type === 'message' ? `message:${e.role}` : e.type)),
      [
        'message:system',
        'message:user',
        'request',
        'response',
        'message:model',
        'message:tool',
        'request',
        'response',
        'message:model',
      ],
    );
    const tool = messages(log.events).find((m) => m.role === 'tool');
    assert.deepEqual(tool?.content, [
      {
        kind: 'tool-result',
        callId: 'call-1',
        toolName: 'ls',
        failed: false,
        content: [{ kind: 'text', text: 'a.txt\nb.txt' }],
      },
    ]);
    assert.equal(tool?.at, 1700000001500);
    const req = log.events.find((e) => e.type === 'request');
    const lsDef = {
      name: 'ls',
      description: 'List files in a folder',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    };
    assert.deepEqual(req?.type === 'request' && req.tools, [
      { name: 'ls', digest: toolDefinitionDigest(lsDef) },
    ]);
    assert.ok(log.events.every((e) => e.type !== 'request' || !('notes' in e)));
  });

  test('v2: results placed after their calls in order, a result without a call before its request', () => {
    const log = convert(2);
    const kinds = log.events.map((e) =>
      e.type === 'message'
        ? `${e.role}:${e.content.map((p) => (p.kind === 'tool-result' ? p.callId : p.kind)).join('+')}`
        : e.type,
    );
    assert.deepEqual(kinds.slice(4, 9), [
      'model:reasoning+tool-call+tool-call',
      'tool:call-a',
      'tool:call-b',
      'tool:call-orphan',
      'request',
    ]);
    const results = messages(log.events).flatMap((m) => m.content.filter((p) => p.kind === 'tool-result'));
    assert.deepEqual(
      results.map((r) => [r.callId, r.toolName, r.failed]),
      [
        ['call-a', 'read', false],
        ['call-b', 'ls', true],
        ['call-orphan', undefined, false],
      ],
    );
    assert.deepEqual(log.header, {
      version: 5,
      id: 'fixture-v2',
      createdAt: 1700000000000,
      cwd: '/srv/project',
      parent: 'fixture-v1',
      origin: 'task',
      depth: 1,
      preset: 'coder',
    });
    assert.deepEqual(
      log.events.filter((e) => e.type !== 'message').map((e) => e.type),
      ['request', 'response', 'request', 'tool-result-trimmed', 'image-set-aside', 'pruning', 'response'],
    );
  });

  test('v3: a result goes right after the call even when other events came between', () => {
    const log = convert(3);
    const i = log.events.findIndex((e) => e.type === 'message' && e.role === 'tool');
    const call = log.events[i - 1];
    const next = log.events[i + 1];
    assert.ok(call?.type === 'message' && call.content[0]?.kind === 'tool-call');
    assert.ok(next?.type === 'message' && next.role === 'user');
    // its time is the time of the event it precedes, so `at` stays in order
    assert.equal(log.events[i]?.at, next.at);
    assert.equal(log.header.seeded, true);
    assert.equal(log.header.inheritedEvents, 2);
    assert.equal(log.events.length, 11);
  });

  test('property: any v3 log converts to a valid v4 log with one tool message per note', () => {
    const text = fc.string({ maxLength: 8 });
    const note = fc.record({ callId: fc.constantFrom('a', 'b', 'c', 'zz'), failed: fc.boolean(), text });
    const ev = fc.oneof(
      fc.record({ kind: fc.constant('msg'), call: fc.option(fc.constantFrom('a', 'b', 'c')), text }),
      fc.record({ kind: fc.constant('req'), notes: fc.array(note, { maxLength: 3 }) }),
    );
    fc.assert(
      fc.property(fc.array(ev, { maxLength: 12 }), (spec) => {
        const events = spec.map((s, seq) =>
          s.kind === 'msg'
            ? {
                seq,
                at: seq,
                type: 'message' as const,
                role: 'model' as const,
                content:
                  s.call === null
                    ? [{ kind: 'text' as const, text: s.text }]
                    : [{ kind: 'tool-call' as const, id: s.call, name: `tool-${s.call}`, args: '{}' }],
              }
            : {
                seq,
                at: seq,
                type: 'request' as const,
                requestId: `r${seq}`,
                format: 'openai' as const,
                provider: 'p',
                model: 'm',
                settings: {},
                tools: [],
                notes: s.notes.map((n) => ({
                  callId: n.callId,
                  failed: n.failed,
                  content: [{ kind: 'text' as const, text: n.text }],
                })),
              },
        );
        const log = upgradeToCurrent(3, { version: 3, id: 'p', createdAt: 0 }, events);
        assertValidCurrent(log.events);
        const noteCount = spec.reduce((n, s) => n + (s.kind === 'req' ? s.notes.length : 0), 0);
        assert.equal(log.events.length, spec.length + noteCount);
        const results = messages(log.events).flatMap((m) =>
          m.content.filter((p) => p.kind === 'tool-result'),
        );
        assert.equal(results.length, noteCount);
        // every result comes after its call when the call exists, and before the request that sent it
        for (const [i, e] of log.events.entries()) {
          if (e.type !== 'message' || e.role !== 'tool') continue;
          const part = e.content[0];
          assert.ok(part?.kind === 'tool-result');
          const later = log.events.slice(i + 1).some((x) => x.type === 'request');
          assert.ok(later, 'a request follows the result');
          if (part.toolName !== undefined) assert.equal(part.toolName, `tool-${part.callId}`);
        }
      }),
    );
  });
});

describe('convertFileBeside', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'oda-convert-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('writes <name>@v5.jsonl beside the original and leaves the original untouched', async () => {
    for (const v of [0, 1, 2, 3, 4] as const) {
      const original = join(dir, `chat-${v}.jsonl`);
      await copyFile(fixture(v), original);
      const before = await readFile(original, 'utf8');
      const out = await convertFileBeside(original);
      assert.equal(out, join(dir, `chat-${v}@v5.jsonl`));
      assert.equal(await readFile(original, 'utf8'), before);
      const read = readLogText(await readFile(out, 'utf8'));
      assert.equal(read.version, 5);
      assert.deepEqual(read.problems, []);
      assert.equal(logToText({ header: read.header, events: read.events }), logToText(convert(v)));
    }
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.includes('.tmp-')),
      [],
    );
  });

  test('is idempotent and never replaces an existing generation', async () => {
    const original = join(dir, 'again.jsonl');
    await copyFile(fixture(2), original);
    const first = await convertFileBeside(original);
    const st1 = await stat(first);
    const second = await convertFileBeside(original);
    assert.equal(second, first);
    const st2 = await stat(second);
    assert.equal(st2.ino, st1.ino);
    assert.equal(st2.mtimeMs, st1.mtimeMs);
    // concurrent conversions agree on one file
    const other = join(dir, 'race.jsonl');
    await copyFile(fixture(1), other);
    const outs = await Promise.all([
      convertFileBeside(other),
      convertFileBeside(other),
      convertFileBeside(other),
    ]);
    assert.deepEqual(new Set(outs), new Set([besidePath(other)]));
    assert.deepEqual(readLogText(await readFile(besidePath(other), 'utf8')).problems, []);
  });

  test('a current log is its own current generation', async () => {
    const original = join(dir, 'now.jsonl');
    await copyFile(fixture(5), original);
    assert.equal(await convertFileBeside(original), original);
    await assert.rejects(stat(besidePath(original)), { code: 'ENOENT' });
  });

  test('refuses to reuse a foreign file at the target, and to convert a broken log', async () => {
    const original = join(dir, 'foreign.jsonl');
    await copyFile(fixture(0), original);
    await writeFile(besidePath(original), '{"version":5,"id":"someone-else","createdAt":0}\n');
    await assert.rejects(
      convertFileBeside(original),
      /foreign@v5\.jsonl exists but is not the v5 generation/,
    );
    const broken = join(dir, 'broken.jsonl');
    const lines = fixtureText(1).trimEnd().split('\n');
    lines[3] = '{"seq":2,"type":"request"}';
    await writeFile(broken, `${lines.join('\n')}\n`);
    await assert.rejects(
      convertFileBeside(broken),
      /cannot convert chat log broken\.jsonl from v1: line 4: invalid/,
    );
    await assert.rejects(stat(besidePath(broken)), { code: 'ENOENT' });
  });

  test('a torn last line of an old log is dropped from the converted generation', async () => {
    const torn = join(dir, 'torn.jsonl');
    await writeFile(torn, `${fixtureText(0)}{"seq":8,"at":1,"ty`);
    const out = await convertFileBeside(torn);
    assert.equal(readLogText(await readFile(out, 'utf8')).events.length, 8);
  });

  test("an earlier build's generation (named <name>.v4.jsonl then, beside a v3 log) is the one converted", async () => {
    const original = join(dir, 'gen.jsonl');
    await copyFile(fixture(3), original);
    // what an earlier build did: convert to v4 beside, then append there
    const v4Text = logToText(convert(3)).replace(/^\{"version":5,/, '{"version":4,');
    const appended = JSON.stringify({
      seq: readLogText(v4Text).events.length,
      at: 1800000000000,
      type: 'message',
      role: 'user',
      content: [{ kind: 'text', text: 'appended after the v4 conversion' }],
    });
    const v4Path = join(dir, 'gen.v4.jsonl');
    await writeFile(v4Path, `${v4Text}${appended}\n`);
    const v4Before = await readFile(v4Path, 'utf8');
    const out = await convertFileBeside(original);
    assert.equal(out, join(dir, 'gen@v5.jsonl'));
    const read = readLogText(await readFile(out, 'utf8'));
    assert.equal(read.version, 5);
    assert.deepEqual(read.problems, []);
    assert.deepEqual(read.events.at(-1), JSON.parse(appended));
    // neither earlier generation is written
    assert.equal(await readFile(v4Path, 'utf8'), v4Before);
    assert.equal(await readFile(original, 'utf8'), fixtureText(3));
  });

  test('a file of another chat at an intermediate name is not taken for a generation', async () => {
    const original = join(dir, 'mine.jsonl');
    await copyFile(fixture(2), original);
    await writeFile(join(dir, 'mine.v4.jsonl'), '{"version":4,"id":"mine.v4","createdAt":0}\n');
    const out = await convertFileBeside(original);
    assert.equal(await readFile(out, 'utf8'), logToText(convert(2)));
  });
});

test('a current log read through upgradeToCurrent keeps a "__proto__" member as stored (log read, log check)', () => {
  const text = [
    JSON.stringify({ version: CURRENT_VERSION, id: 'p', createdAt: 1 }),
    '{"seq":0,"at":2,"type":"message","role":"user","content":[{"kind":"raw","value":{"type":"x","__proto__":{"a":1}}}],"wire":{"__proto__":{"b":2}},"source":{"kind":"client"}}',
    '',
  ].join('\n');
  const read = readLogText(text);
  const log = upgradeToCurrent(read.version, read.header, read.events);
  const [event] = log.events;
  assert.ok(event?.type === 'message');
  const raw = event.content[0];
  assert.ok(raw?.kind === 'raw');
  assert.ok(Object.hasOwn(raw.value as object, '__proto__'), 'the raw part keeps its member');
  assert.ok(Object.hasOwn(event.wire ?? {}, '__proto__'), 'the wire fields keep theirs');
  assert.equal(logToText(log).split('"__proto__"').length - 1, 2);
});
