import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  echoDigest,
  legacyDigest,
  messageDigest,
  messageKey,
  reasoningFreeDigest,
  type LogMessage,
} from './message-digest.ts';
import { recognises, type LoggedMessage } from './read-models/messages.ts';

/** A Responses answer as the log holds it: the model's `message` output item. */
const answer: LogMessage = {
  role: 'model',
  content: [{ kind: 'text', text: 'four' }],
  wire: {
    type: 'message',
    id: 'msg_1',
    status: 'completed',
    content: [{ type: 'output_text', annotations: [], logprobs: [] }],
  },
};

const text = (t: string) => [{ kind: 'text' as const, text: t }];

describe('messageDigest', () => {
  test('the digests of what is already logged are the ones logs were written with', () => {
    // Branch ids and derived chat ids are built from these: they must not move.
    assert.equal(messageDigest(answer), '105bfdbf31c84db7a29087dc2b6eb912efa021df6bfd31edfe009d04f0c7ab76');
    assert.equal(
      messageDigest({ role: 'user', content: text('two plus two?') }),
      '701f29c361a129876936248ffe644365fb48f03fafbb1fa2991e403b7be6560f',
    );
  });
});

describe('echoDigest: the model’s output sent back in another form is the same message', () => {
  const echoes: Array<[string, LogMessage]> = [
    ['without id and status', { ...answer, wire: { type: 'message', content: answer.wire!.content! } }],
    ['as a plain string', { role: 'model', content: text('four') }],
    [
      'as an output_text part only',
      { role: 'model', content: text('four'), wire: { content: [{ type: 'output_text' }] } },
    ],
    [
      'as an input_text part, typed message',
      { role: 'model', content: text('four'), wire: { type: 'message', content: [{ type: 'input_text' }] } },
    ],
    [
      "with the client's item metadata added (Codex on its built-in OpenAI provider)",
      {
        ...answer,
        wire: { ...answer.wire, internal_chat_message_metadata_passthrough: { turn_id: '01a2-turn' } },
      },
    ],
  ];
  for (const [name, echo] of echoes) {
    test(name, () => {
      assert.notEqual(messageDigest(echo), messageDigest(answer), 'another exact digest');
      assert.equal(echoDigest(echo), echoDigest(answer));
    });
  }

  test('a raw item (reasoning with encrypted content) without its id', () => {
    const reasoning = (wire?: Record<string, string>): LogMessage => ({
      role: 'model',
      content: [{ kind: 'raw', value: { type: 'reasoning', encrypted_content: 'gAAAA', summary: [] } }],
      ...(wire && { wire }),
    });
    assert.equal(echoDigest(reasoning()), echoDigest(reasoning({ id: 'rs_1' })));
  });

  const different: Array<[string, LogMessage]> = [
    ['other text', { ...answer, content: text('five') }],
    ['other role', { ...answer, role: 'user' }],
    [
      'a refusal of the same text',
      { role: 'model', content: text('four'), wire: { content: [{ type: 'refusal' }] } },
    ],
    ['another phase', { ...answer, wire: { ...answer.wire, phase: 'commentary' } }],
    ['another item type', { ...answer, wire: { ...answer.wire, type: 'future_message' } }],
    [
      'an image detail',
      {
        role: 'user',
        content: [{ kind: 'image', url: 'https://x/a.png' }],
        wire: { content: [{ type: 'input_image', detail: 'high' }] },
      },
    ],
  ];
  for (const [name, other] of different) {
    test(`not the same: ${name}`, () => {
      const plain: LogMessage =
        name === 'an image detail' ? { role: 'user', content: other.content } : answer;
      assert.notEqual(echoDigest(other), echoDigest(plain));
    });
  }

  test('a message without echo-only fields has its exact digest as echo digest', () => {
    const plain: LogMessage = { role: 'user', content: text('hi'), wire: { name: 'alice' } };
    assert.equal(echoDigest(plain), messageDigest(plain));
    assert.equal(
      echoDigest({ role: 'user', content: text('hi') }),
      messageDigest({ role: 'user', content: text('hi') }),
    );
  });
});

describe('recognises', () => {
  const logged: LoggedMessage = {
    seq: 3,
    role: 'model',
    digest: messageDigest(answer),
    echo: echoDigest(answer),
    itemId: 'msg_1',
  };
  test('the same message, its echo, or a reference to its item id', () => {
    assert.ok(recognises(logged, messageKey(answer)));
    assert.ok(recognises(logged, messageKey({ role: 'model', content: text('four') })));
    const reference: LogMessage = {
      role: 'other',
      content: [{ kind: 'raw', value: { type: 'item_reference', id: 'msg_1' } }],
    };
    assert.ok(recognises(logged, messageKey(reference, 'msg_1')));
  });
  test('not another message, nor a reference to another item', () => {
    assert.ok(!recognises(logged, messageKey({ role: 'model', content: text('five') })));
    const reference: LogMessage = {
      role: 'other',
      content: [{ kind: 'raw', value: { type: 'item_reference', id: 'msg_2' } }],
    };
    assert.ok(!recognises(logged, messageKey(reference, 'msg_2')));
  });
  test('a file with its content: another content is another message; a log without file content recognises it', () => {
    const file = (data: string) => ({
      kind: 'file' as const,
      name: 'a.pdf',
      mediaType: 'application/pdf',
      url: `data:application/pdf;base64,${data}`,
      sha256: data.padEnd(64, '0'),
      bytes: 3,
    });
    const sent: LogMessage = { role: 'user', content: [file('aaaa')] };
    const edited: LogMessage = { role: 'user', content: [file('bbbb')] };
    const entry = (m: LogMessage): LoggedMessage => ({ seq: 0, role: 'user', digest: messageDigest(m) });
    assert.ok(recognises(entry(sent), messageKey(sent)));
    assert.ok(!recognises(entry(sent), messageKey(edited)));
    // As logs written before files kept their content hold it (also inside a tool result).
    const stub: LogMessage = {
      role: 'user',
      content: [{ kind: 'file', name: 'a.pdf', mediaType: 'application/pdf' }],
    };
    assert.ok(recognises(entry(stub), messageKey(sent)));
    assert.equal(legacyDigest(stub), undefined, 'nothing to leave out');
    const inResult = (f: ReturnType<typeof file> | (typeof stub.content)[number]): LogMessage => ({
      role: 'tool',
      content: [{ kind: 'tool-result', callId: 'c1', failed: false, content: [f as never] }],
    });
    assert.equal(legacyDigest(inResult(file('aaaa'))), messageDigest(inResult(stub.content[0]!)));
    // A remote URL is part of what such logs hold.
    const remote: LogMessage = {
      role: 'user',
      content: [{ kind: 'file', url: 'https://example.com/a.pdf' }],
    };
    assert.equal(legacyDigest(remote), undefined);
  });
  test('an answer with its reasoning, or without it: the same message either way', () => {
    const thought: LogMessage = {
      role: 'model',
      content: [{ kind: 'reasoning', text: 'think', signature: 's' }, ...text('four')],
    };
    const plain: LogMessage = { role: 'model', content: text('four') };
    const entry = (m: LogMessage): LoggedMessage => {
      const bare = reasoningFreeDigest(m);
      return { seq: 0, role: 'model', digest: messageDigest(m), ...(bare !== undefined && { bare }) };
    };
    assert.ok(recognises(entry(thought), messageKey(plain)), 'sent back without its reasoning');
    assert.ok(recognises(entry(plain), messageKey(thought)), 'logged without, sent with');
    assert.ok(!recognises(entry(thought), messageKey({ role: 'model', content: text('five') })));
    // Reasoning alone is no answer text: such a message has no reasoning-free digest.
    assert.equal(
      reasoningFreeDigest({ role: 'model', content: [{ kind: 'reasoning', text: 'x' }] }),
      undefined,
    );
    assert.equal(reasoningFreeDigest(plain), undefined);
  });
  test('a message logged without echo-only fields is recognised by its echo', () => {
    const plain = { role: 'model' as const, content: text('four') };
    const entry: LoggedMessage = { seq: 1, role: 'model', digest: messageDigest(plain) };
    assert.ok(recognises(entry, messageKey(answer)));
  });
});
