import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { answerEnd, messagesModel, recogniserOf, recognises, type LoggedMessage } from './messages.ts';
import type { MessageKey } from '../message-digest.ts';
import { fold } from './read-model.ts';
import { msg, request, response } from './test-events.ts';
import { echoDigest, messageDigest } from '../message-digest.ts';
import type { Event } from '../format/current.ts';

test('keeps the digests of every message in order with their seq (system messages where they stand); other events are left out', () => {
  const events = [
    msg(0, 'system', 'be brief'),
    msg(1, 'user', 'hi'),
    request(2),
    msg(3, 'model', 'hello'),
    msg(4, 'tool', 'out'),
    msg(5, 'developer', 'tools changed'),
  ];
  const s = fold(messagesModel, messagesModel.initial(), events);
  assert.deepEqual(
    s.messages.map((m) => [m.seq, m.role]),
    [
      [0, 'system'],
      [1, 'user'],
      [3, 'model'],
      [4, 'tool'],
      [5, 'developer'],
    ],
  );
  assert.equal(
    s.messages[1]?.digest,
    messageDigest({ role: 'user', content: [{ kind: 'text', text: 'hi' }] }),
  );
  assert.notEqual(
    s.messages[1]?.digest,
    messageDigest({ role: 'model', content: [{ kind: 'text', text: 'hi' }] }),
  );
  assert.equal(messagesModel.internal, true);
});

test("a provider's answer is marked, a client's message is not", () => {
  const answer: Event = { ...msg(1, 'model', 'hello'), source: { kind: 'provider' } } as Event;
  const echoed: Event = { ...msg(2, 'model', 'hello'), source: { kind: 'client' } } as Event;
  const s = fold(messagesModel, messagesModel.initial(), [msg(0, 'user', 'hi'), answer, echoed]);
  assert.deepEqual(
    s.messages.map((m) => m.answeredAt ?? false),
    [false, 1001, false],
  );
});

test('a compaction drops the messages its summary replaced; the history goes on after it', () => {
  const events: Event[] = [
    msg(0, 'user', 'a'),
    msg(1, 'model', 'b'),
    msg(2, 'user', 'c'),
    msg(3, 'model', 'summary'),
    { seq: 4, at: 1004, type: 'compaction', requestId: 'r', replaced: { fromSeq: 1, toSeq: 3 }, messages: 1 },
    msg(5, 'user', 'from the summary'),
  ];
  const s = fold(messagesModel, messagesModel.initial(), events);
  assert.deepEqual(
    s.messages.map((m) => m.seq),
    [0, 5],
  );
  // Folded one event at a time or as one batch, the same state.
  const one = events.reduce((st, e) => messagesModel.apply(st, e), messagesModel.initial());
  assert.deepEqual(one, s);
});

test('an answer logged with a failed response (a stream cut short) leaves the list; the log keeps it', () => {
  const answer = (seq: number, text: string): Event =>
    ({ ...msg(seq, 'model', text), source: { kind: 'provider' } }) as Event;
  const events: Event[] = [
    msg(0, 'user', 'q1'),
    request(1),
    answer(2, 'par'),
    answer(3, 'tial'),
    response(4, 1000, false),
    request(5),
    answer(6, 'whole answer'),
    response(7, 1000, true),
    msg(8, 'user', 'q2'),
    request(9),
    // A refusal logs no answer: the messages before it are the client's and stay.
    response(10, 1000, false),
  ];
  const s = fold(messagesModel, messagesModel.initial(), events);
  assert.deepEqual(
    s.messages.map((m) => m.seq),
    [0, 6, 8],
  );
  // Folded one event at a time or as one batch, the same state.
  const one = events.reduce((st, e) => messagesModel.apply(st, e), messagesModel.initial());
  assert.deepEqual(one, s);
});

test("a failed response takes away only the answer right before it, not an earlier answer or the client's messages", () => {
  const answer: Event = { ...msg(1, 'model', 'whole'), source: { kind: 'provider' } } as Event;
  const s = fold(messagesModel, messagesModel.initial(), [
    msg(0, 'user', 'q'),
    answer,
    response(2, 1000, true),
    // A concurrent request for the same history whose answer the log already held: only its response.
    response(3, 1000, false),
  ]);
  assert.deepEqual(
    s.messages.map((m) => m.seq),
    [0, 1],
  );
});

test('keeps the echo digest and the item id of a message whose wire has them; a new version rebuilds older states', () => {
  const answer: Event = {
    ...msg(1, 'model', 'hello'),
    wire: {
      type: 'message',
      id: 'msg_1',
      status: 'completed',
      content: [{ type: 'output_text', annotations: [] }],
    },
  } as Event;
  const s = fold(messagesModel, messagesModel.initial(), [msg(0, 'user', 'hi'), answer]);
  assert.equal(s.messages[0]?.echo, undefined, 'no echo digest where it is the exact one');
  assert.equal(s.messages[0]?.itemId, undefined);
  assert.equal(
    s.messages[1]?.echo,
    echoDigest({ role: 'model', content: [{ kind: 'text', text: 'hello' }] }),
  );
  assert.notEqual(s.messages[1]?.echo, s.messages[1]?.digest);
  assert.equal(s.messages[1]?.itemId, 'msg_1');
  // States saved before echo (version 6) or reasoning-free digests (version 7) existed lack them,
  // and those saved before Codex's item metadata was echo-only (version 8) hold other echo
  // digests: their checkpoints must not be reused.
  assert.equal(messagesModel.version, 8);
});

test("a provider's answer that is only reasoning is marked (a client may leave it out); other messages are not", () => {
  const provider = (seq: number, content: unknown[]): Event =>
    ({ seq, at: 1000 + seq, type: 'message', role: 'model', content, source: { kind: 'provider' } }) as Event;
  const s = fold(messagesModel, messagesModel.initial(), [
    msg(0, 'user', 'q'),
    provider(1, [{ kind: 'reasoning', text: 'thinking' }]),
    provider(2, [{ kind: 'raw', value: { type: 'reasoning', encrypted_content: 'gAAAA' } }]),
    provider(3, [
      { kind: 'reasoning', text: 'thinking' },
      { kind: 'text', text: 'answer' },
    ]),
    provider(4, [{ kind: 'raw', value: { type: 'web_search_call' } }]),
    { ...msg(5, 'model', 'sent back'), content: [{ kind: 'reasoning', text: 'thinking' }] } as Event,
  ]);
  assert.deepEqual(
    s.messages.map((m) => m.reasoning ?? false),
    [false, true, true, false, false, false],
  );
  // An answer with reasoning beside its text also keeps its digest without the reasoning.
  assert.equal(
    s.messages[3]?.bare,
    messageDigest({ role: 'model', content: [{ kind: 'text', text: 'answer' }] }),
  );
  assert.equal(s.messages[1]?.bare, undefined);
});

test('the last message of an answer carries its response id; answerEnd finds where that answer ends', () => {
  const answer = (seq: number, text: string): Event =>
    ({ ...msg(seq, 'model', text), source: { kind: 'provider' } }) as Event;
  const withId = (e: Event, responseId: string): Event => ({ ...e, responseId }) as Event;
  const s = fold(messagesModel, messagesModel.initial(), [
    msg(0, 'user', 'q1'),
    answer(1, 'thinking'),
    answer(2, 'a1'),
    withId(response(3, 1000, true), 'resp_1'),
    msg(4, 'user', 'q2'),
    answer(5, 'a2'),
    withId(response(6, 1000, true), 'resp_2'),
    // A failed answer's id names nothing to continue from.
    answer(7, 'cut'),
    withId(response(8, 1000, false), 'resp_3'),
  ]);
  assert.deepEqual(
    s.messages.map((m) => m.responseId ?? null),
    [null, null, 'resp_1', null, 'resp_2'],
  );
  assert.equal(answerEnd(s.messages, 'resp_1'), 3);
  assert.equal(answerEnd(s.messages, 'resp_2'), 5);
  assert.equal(answerEnd(s.messages, 'resp_3'), undefined);
  assert.equal(answerEnd(s.messages, 'resp_unknown'), undefined);
});

test('recogniserOf finds a logged message exactly when recognises accepts one', () => {
  // Digests from a tiny alphabet, so that every way two of them can meet does.
  const d = fc.constantFrom('a', 'b', 'c', 'd');
  const logged = fc.record(
    {
      seq: fc.nat(),
      role: fc.constantFrom('user' as const, 'model' as const),
      digest: d,
      echo: d,
      bare: d,
      itemId: d,
    },
    { requiredKeys: ['seq', 'role', 'digest'] },
  );
  const key = fc.record(
    { digest: d, echo: d, refersTo: d, legacy: d, bare: d },
    { requiredKeys: ['digest', 'echo'] },
  );
  fc.assert(
    fc.property(fc.array(logged, { maxLength: 6 }), key, (list, k) => {
      const found = recogniserOf(list as LoggedMessage[])(k as MessageKey);
      const expected = list.some((m) => recognises(m as LoggedMessage, k as MessageKey));
      assert.equal(found !== undefined, expected);
      if (found) assert.ok(recognises(found, k as MessageKey), 'what it finds is recognised');
    }),
    { numRuns: 2000 },
  );
});
