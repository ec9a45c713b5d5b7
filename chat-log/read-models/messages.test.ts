import { test } from 'node:test';
import assert from 'node:assert/strict';
import { messagesModel } from './messages.ts';
import { fold } from './read-model.ts';
import { msg, request } from './test-events.ts';
import { messageDigest } from '../message-digest.ts';

test('keeps the digests of conversation messages in order with their seq; system and other events are left out', () => {
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
      [1, 'user'],
      [3, 'model'],
      [4, 'tool'],
      [5, 'developer'],
    ],
  );
  assert.equal(
    s.messages[0]?.digest,
    messageDigest({ role: 'user', content: [{ kind: 'text', text: 'hi' }] }),
  );
  assert.notEqual(
    s.messages[0]?.digest,
    messageDigest({ role: 'model', content: [{ kind: 'text', text: 'hi' }] }),
  );
  assert.equal(messagesModel.internal, true);
});
