// upgradeToCurrent: every older chat log version converted step by step to a valid current log.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readLogText, upgradeToCurrent, logToText } from './convert.ts';
import { CURRENT_VERSION, VERSIONS } from './format/index.ts';
import { event as currentEvent, header as currentHeader, type Event } from './format/current.ts';
import { toolDefinitionDigest } from './format/upgrade-steps.ts';
import { convert, fixtureText } from './test-convert-fixtures.ts';

function assertValidCurrent(events: readonly Event[]): void {
  events.forEach((e, i) => {
    assert.equal(e.seq, i, 'contiguous seq from 0');
    currentEvent.parse(e);
  });
}

type Msg = Extract<Event, { type: 'message' }>;
const messages = (events: readonly Event[]) => events.filter((e): e is Msg => e.type === 'message');

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
