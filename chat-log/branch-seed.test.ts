import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { branchSeed } from './branch-seed.ts';
import type { ContentPart, Event } from './format/current.ts';
import { decisionsModel } from './read-models/decisions.ts';
import { fold } from './read-models/read-model.ts';
import { request, response, setAside, trim } from './read-models/test-events.ts';

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
const PNG_A = Buffer.from('picture a');
const PNG_B = Buffer.from('picture b');
const REMOTE = 'https://example.com/c.png';

type ResultPart = Extract<ContentPart, { kind: 'tool-result' }>['content'][number];

const attachment = (bytes: Buffer): Extract<ContentPart, { kind: 'image' }> => ({
  kind: 'image',
  attachment: { sha256: sha(bytes), mediaType: 'image/png', bytes: bytes.length, width: 1, height: 1 },
});
const message = (seq: number, role: 'user' | 'model' | 'tool', content: ContentPart[]): Event => ({
  seq,
  at: 1000 + seq,
  type: 'message',
  role,
  content,
});
const toolResult = (seq: number, callId: string, content: ResultPart[] = []): Event =>
  message(seq, 'tool', [{ kind: 'tool-result', callId, failed: false, content }]);
const pass = (seq: number, callIds: string[]): Event => ({
  seq,
  at: 1000 + seq,
  type: 'pruning',
  requestId: `r${seq}`,
  projection: callIds.map((callId) => ({ callId, action: 'soft' as const, digest: 'a'.repeat(64) })),
  soft: callIds.length,
  cleared: 0,
  charsRemoved: 100,
  estimateBefore: 9000,
  estimateAfter: 8900,
  changed: true,
});

/**
 * A parent whose last request (messages 0-4, the user's last message at seq 4) set images aside and
 * trimmed results, and went on past it: the branch edits message 4, so it shares seq 0-3.
 */
const shared: Event[] = [
  message(0, 'user', [{ kind: 'text', text: 'look' }, attachment(PNG_A), { kind: 'image', url: REMOTE }]),
  message(1, 'model', [{ kind: 'tool-call', id: 'call_1', name: 'read', args: '{}' }]),
  toolResult(2, 'call_1', [{ kind: 'image', url: `data:image/png;base64,${PNG_B.toString('base64')}` }]),
  message(3, 'model', [{ kind: 'text', text: 'seen' }]),
];
const parent: Event[] = [
  ...shared,
  message(4, 'user', [{ kind: 'text', text: 'and this?' }, attachment(Buffer.from('picture d'))]),
  request(5),
  setAside(6, sha(PNG_A), 'note a'),
  setAside(7, sha(REMOTE), 'note c'),
  setAside(8, sha(PNG_B), 'note b'),
  setAside(9, sha(Buffer.from('picture d')), 'note d'),
  trim(10, 'call_1', 0),
  message(11, 'model', [{ kind: 'tool-call', id: 'call_2', name: 'read', args: '{}' }]),
  response(12, 1000, true),
  toolResult(13, 'call_2'),
  request(14),
  trim(15, 'call_2', 0),
  response(16, 2000, true),
];

test('a branch inherits the later decisions about the images and tool results it shares, in order', () => {
  const seed = branchSeed(parent, 4);
  assert.deepEqual(seed.slice(0, 4), shared);
  assert.deepEqual(
    seed.slice(4).map((e) => e.seq),
    [6, 7, 8, 10],
    'the shared images (attachment, remote URL, inline data in a tool result) and the shared trim',
  );
  // What the branch replays: the decisions about its own history only.
  const decisions = fold(
    decisionsModel,
    decisionsModel.initial(),
    seed.map((e, seq) => ({ ...e, seq })),
  );
  assert.deepEqual(
    Object.values(decisions.trims).map((t) => `${t.callId}:${t.part}`),
    ['call_1:0'],
  );
  assert.deepEqual(Object.keys(decisions.setAside).sort(), [sha(PNG_A), sha(PNG_B), sha(REMOTE)].sort());
});

test('a seed that shares nothing, or a fork at the end of the log, is the shared events alone', () => {
  assert.deepEqual(branchSeed(parent, 0), []);
  assert.deepEqual(branchSeed(shared, 4), shared);
});

test("the parent's latest pruning pass is inherited, narrowed to the shared results", () => {
  const seed = branchSeed([...parent, pass(17, ['call_0']), pass(18, ['call_1', 'call_2'])], 4);
  assert.deepEqual(
    seed.filter((e) => e.type === 'pruning'),
    [{ ...pass(18, ['call_1']), soft: 2 }],
    'the pass as the parent recorded it, its projection without the result the branch does not share',
  );
});

test('a later pass that pruned no shared result is inherited only to replace a seeded projection', () => {
  assert.deepEqual(
    branchSeed([...parent, pass(17, ['call_2'])], 4).filter((e) => e.type === 'pruning'),
    [],
  );
  // The shared history holds a pass over call_1; the parent's latest one no longer prunes it.
  const seeded = [...shared, pass(4, ['call_1']), message(5, 'user', []), pass(6, ['call_2'])];
  assert.deepEqual(
    branchSeed(seeded, 5).filter((e) => e.type === 'pruning'),
    [pass(4, ['call_1']), { ...pass(6, []), soft: 1 }],
  );
});
