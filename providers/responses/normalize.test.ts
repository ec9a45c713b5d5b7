import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { readSseText } from '../../lib/sse-reader.ts';
import { sha256Hex } from '../../lib/sha256.ts';
import { canonicalJson } from '../../chat-log/canonical-json.ts';
import { normalizeResponsesRequest, normalizeResponsesResponse } from './normalize.ts';
import { createResponsesStreamAccumulator } from './responses-stream-accumulator.ts';
import { ENCRYPTED, PNG, SCREENSHOT, codexBody, inputOf } from './__fixtures__/codex-body.ts';
import { rebuildItem } from './__fixtures__/rebuild-item.ts';
import { assertReusedCallIdsNamed } from '../../test/helpers/reused-call-ids.ts';

const fixture = (name: string): string =>
  readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), 'utf8');

function accumulate(text: string) {
  const accumulator = createResponsesStreamAccumulator();
  for (const { event, data } of readSseText(text)) accumulator.push(event, data);
  return accumulator;
}

describe('normalizeResponsesRequest', () => {
  test('one message per input item, in the log roles and kinds, envelopes in wire', () => {
    const normalized = normalizeResponsesRequest(codexBody());
    assert.equal(normalized.model, 'gpt-5-codex');
    assert.equal(normalized.system, 'You are a coding agent.');
    assert.equal(normalized.stream, true);
    assert.deepEqual(normalized.settings, {
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'sess-1',
      x_unknown: { keep: [1, 2, 3] },
    });
    const m = normalized.messages;
    assert.equal(m.length, 22);
    assert.deepEqual(m[0], {
      role: 'developer',
      content: [{ kind: 'text', text: 'Sandbox: read-only.' }],
      wire: { type: 'message', content: [{ type: 'input_text' }] },
    });
    assert.deepEqual(m[1], {
      role: 'user',
      content: [
        { kind: 'text', text: 'What is in this screenshot?' },
        { kind: 'image', source: { kind: 'base64', mediaType: 'image/png', data: PNG } },
      ],
      wire: { type: 'message', content: [{ type: 'input_text' }, { type: 'input_image', detail: 'auto' }] },
    });
    assert.deepEqual(m[2], {
      role: 'model',
      content: [
        {
          kind: 'raw',
          value: {
            type: 'reasoning',
            summary: [{ type: 'summary_text', text: 'List the files first.' }],
            encrypted_content: ENCRYPTED,
          },
        },
      ],
      wire: { id: 'rs_1' },
    });
    assert.deepEqual(m[3], {
      role: 'model',
      content: [{ kind: 'tool-call', id: 'call_ls', name: 'shell', args: '{"command":["ls"]}' }],
      wire: { type: 'function_call', id: 'fc_1', status: 'completed' },
    });
    assert.deepEqual(m[4], {
      role: 'tool',
      content: [
        {
          kind: 'tool-result',
          callId: 'call_ls',
          toolName: 'shell',
          failed: false,
          content: [{ kind: 'text', text: 'README.md\nsrc/' }],
        },
      ],
      wire: { type: 'function_call_output' },
    });
    assert.deepEqual(m[10]?.content, [
      {
        kind: 'tool-result',
        callId: 'call_shot',
        toolName: 'computer',
        failed: false,
        content: [{ kind: 'image', source: { kind: 'base64', mediaType: 'image/png', data: SCREENSHOT } }],
      },
    ]);
    assert.deepEqual(m[12]?.content[0], {
      kind: 'tool-result',
      callId: 'call_cat',
      toolName: 'shell',
      failed: false,
      content: [
        { kind: 'raw', value: { type: 'input_image', file_id: 'file-img1', detail: 'high' } },
        { kind: 'file' },
      ],
    });
    assert.deepEqual(m[13], {
      role: 'model',
      content: [{ kind: 'text', text: 'The project has a README.' }],
      wire: {
        type: 'message',
        id: 'msg_1',
        status: 'completed',
        content: [{ type: 'output_text', annotations: [], logprobs: [] }],
      },
    });
    // A reference is logged as sent; it names the item it stands for, for the comparison only.
    assert.deepEqual(m[15], {
      role: 'other',
      content: [{ kind: 'raw', value: { type: 'item_reference', id: 'msg_old' } }],
      refersTo: 'msg_old',
    });
    assert.deepEqual(m[16], {
      role: 'other',
      content: [{ kind: 'raw', value: { type: 'some_future_item', payload: { a: 1 } } }],
    });
    assert.deepEqual(m[17], { role: 'user', content: [{ kind: 'text', text: 'And now?' }] });
    assert.deepEqual(m[21]?.content[0], {
      kind: 'tool-result',
      callId: 'call_ap',
      toolName: 'apply_patch',
      failed: true,
      content: [{ kind: 'text', text: 'patch did not apply' }],
    });
    assert.deepEqual(
      m.map((message) => message.role),
      [
        'developer',
        'user',
        'model',
        'model',
        'tool',
        'model',
        'tool',
        'model',
        'tool',
        'model',
        'tool',
        'model',
        'tool',
        'model',
        'model',
        'other',
        'other',
        'user',
        'model',
        'tool',
        'model',
        'tool',
      ],
    );
  });

  test('every item can be rebuilt from its log message: nothing is lost', () => {
    const items = inputOf(codexBody());
    const messages = normalizeResponsesRequest(codexBody()).messages;
    items.forEach((item, i) => assert.deepEqual(rebuildItem(messages[i]!), item, `item ${i}`));
  });

  test('keeps a file with its content, the size and digest of its bytes', () => {
    const data = 'JVBERi0xLjQKJcfsj6IK';
    const normalized = normalizeResponsesRequest({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_file', filename: 'a.pdf', file_data: `data:application/pdf;base64,${data}` },
            { type: 'input_file', file_url: 'https://example.com/b.pdf' },
          ],
        },
      ],
    });
    const bytes = Buffer.from(data, 'base64');
    assert.deepEqual(normalized.messages[0]?.content, [
      {
        kind: 'file',
        name: 'a.pdf',
        mediaType: 'application/pdf',
        url: `data:application/pdf;base64,${data}`,
        sha256: sha256Hex(bytes),
        bytes: bytes.length,
      },
      { kind: 'file', url: 'https://example.com/b.pdf' },
    ]);
  });

  test('a string input is one user message; tools by name and digest, built-in tools by type', () => {
    const normalized = normalizeResponsesRequest({
      model: 'gpt-5',
      input: 'Hi',
      tools: [{ type: 'function', name: 'f', parameters: {} }, { type: 'web_search' }, null],
    });
    assert.deepEqual(normalized.messages, [{ role: 'user', content: [{ kind: 'text', text: 'Hi' }] }]);
    assert.equal(normalized.system, undefined);
    assert.equal(normalized.stream, false);
    assert.deepEqual(normalized.tools, [
      { name: 'f', digest: sha256Hex(canonicalJson({ type: 'function', name: 'f', parameters: {} })) },
      { name: 'web_search', digest: sha256Hex(canonicalJson({ type: 'web_search' })) },
    ]);
  });

  test('fromIndex: the same messages as a full normalization from that item on', () => {
    const body = codexBody();
    const full = normalizeResponsesRequest(body);
    for (let from = 0; from <= inputOf(body).length; from++) {
      const part = normalizeResponsesRequest(body, { fromIndex: from });
      assert.deepEqual(part.messages, full.messages.slice(from), `from ${from}`);
    }
  });

  test('a call id handed out again: each result is named by its own call, the same as the chat grows', () => {
    const call = (name: string) => ({ type: 'function_call', call_id: 'call_0', name, arguments: '{}' });
    const result = (output: string) => ({ type: 'function_call_output', call_id: 'call_0', output });
    assertReusedCallIdsNamed(
      (messages) => normalizeResponsesRequest({ model: 'm', input: messages }),
      call,
      result,
    );
  });

  test('malformed input is kept raw or skipped, never thrown on', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue(), (extra, input) => {
        const normalized = normalizeResponsesRequest({ ...extra, input });
        assert.ok(Array.isArray(normalized.messages));
      }),
    );
  });
});

describe('normalizeResponsesResponse', () => {
  const response = () => JSON.parse(fixture('stream-tool-call.json')) as Record<string, unknown>;

  test('one message per output item, the response id, usage and status', () => {
    const normalized = normalizeResponsesResponse(response());
    assert.equal(normalized.responseId, 'resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9');
    assert.equal(normalized.model, 'gpt-5-codex');
    assert.equal(normalized.stopReason, 'completed');
    assert.deepEqual(normalized.usage, { inputTokens: 5120, outputTokens: 132, cacheReadTokens: 4864 });
    assert.deepEqual(
      normalized.messages?.map((m) => [m.role, m.content.map((p) => p.kind)]),
      [
        ['model', ['raw']],
        ['model', ['text']],
        ['model', ['tool-call']],
      ],
    );
    assert.deepEqual(
      normalized.message.content,
      normalized.messages?.flatMap((m) => m.content),
    );
    const output = response().output as unknown[];
    normalized.messages?.forEach((m, i) => assert.deepEqual(rebuildItem(m), output[i], `output ${i}`));
  });

  test("a stored response's output item ids are kept (a later item_reference names them); an unstored one's are not", () => {
    const ids = (response().output as Array<{ id: string }>).map((item) => item.id);
    assert.deepEqual(normalizeResponsesResponse({ ...response(), store: true }).itemIds, ids);
    assert.equal(normalizeResponsesResponse({ ...response(), store: false }).itemIds, undefined);
  });

  test('output items sent back in input, as a stateless client sends them, log the same content', () => {
    const output = response().output as Array<Record<string, unknown>>;
    // What Codex sends back: no ids, no status, no annotations or logprobs, null for absent fields.
    const sentBack = output.map((item) => {
      const { id: _id, status: _status, ...rest } = item;
      if (rest.type === 'message') {
        rest.content = (rest.content as Array<Record<string, unknown>>).map((p) => ({
          type: p.type,
          text: p.text,
        }));
      }
      if (rest.type === 'reasoning') rest.content = null;
      return rest;
    });
    const logged = normalizeResponsesResponse(response()).messages!;
    const again = normalizeResponsesRequest({ model: 'gpt-5-codex', input: sentBack }).messages;
    assert.deepEqual(
      again.map((m) => [m.role, m.content]),
      logged.map((m) => [m.role, m.content]),
    );
  });

  test('an incomplete response says why; a body that is not a response gives an empty message', () => {
    const incomplete = normalizeResponsesResponse({
      ...response(),
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    assert.equal(incomplete.stopReason, 'max_output_tokens');
    assert.deepEqual(normalizeResponsesResponse('nope'), {
      message: { role: 'model', content: [] },
      messages: [],
      usage: undefined,
      stopReason: undefined,
      model: undefined,
    });
  });
});

describe('createResponsesStreamAccumulator', () => {
  test('the stream folds into the non-streamed answer', () => {
    const accumulator = accumulate(fixture('stream-tool-call.sse'));
    assert.equal(accumulator.ended(), true);
    assert.deepEqual(
      accumulator.result(),
      normalizeResponsesResponse(JSON.parse(fixture('stream-tool-call.json'))),
    );
  });

  test('a stream cut before response.completed is rebuilt from its items and deltas', () => {
    const events = readSseText(fixture('stream-tool-call.sse'));
    const full = normalizeResponsesResponse(JSON.parse(fixture('stream-tool-call.json')));
    // Cut before the last output_item.done: the function call's arguments come from the deltas.
    const doneAt = events.map((e) => e.event).lastIndexOf('response.output_item.done');
    const accumulator = createResponsesStreamAccumulator();
    for (const { event, data } of events.slice(0, doneAt)) accumulator.push(event, data);
    assert.equal(accumulator.ended(), false);
    const result = accumulator.result();
    assert.equal(result.stopReason, undefined);
    assert.equal(result.responseId, full.responseId);
    assert.deepEqual(
      result.messages?.map((m) => [m.role, m.content]),
      full.messages?.map((m) => [m.role, m.content]),
    );
    // Cut in the middle of the text: the text so far.
    const textAt = events.findIndex((e) => e.event === 'response.output_text.done');
    const partial = createResponsesStreamAccumulator();
    for (const { event, data } of events.slice(0, textAt - 1)) partial.push(event, data);
    assert.deepEqual(partial.result().messages?.[1]?.content, [
      { kind: 'text', text: "I'll list the files" },
    ]);
    // A server that sends deltas without announcing their part (no content_part.added): the text
    // so far is still the answer's.
    const bare = createResponsesStreamAccumulator();
    const push = (e: Record<string, unknown>) => bare.push(String(e.type), JSON.stringify(e));
    push({ type: 'response.created', response: { id: 'resp_1', status: 'in_progress', output: [] } });
    push({
      type: 'response.output_item.added',
      output_index: 0,
      item: { id: 'msg_1', type: 'message', role: 'assistant', status: 'in_progress', content: [] },
    });
    for (const delta of ['Hi', ' there'])
      push({ type: 'response.output_text.delta', output_index: 0, content_index: 0, delta });
    assert.deepEqual(bare.result().messages?.[0]?.content, [{ kind: 'text', text: 'Hi there' }]);
  });

  test('ended() at response.failed and response.incomplete, not at an error event', () => {
    assert.equal(accumulate(fixture('stream-failed-context.sse')).ended(), true);
    assert.equal(accumulate(fixture('stream-failed-context.sse')).result().stopReason, 'failed');
    const errored = accumulate(fixture('stream-error-context.sse'));
    assert.equal(errored.ended(), false);
    assert.equal(errored.result().stopReason, 'error');
    const incomplete = createResponsesStreamAccumulator();
    incomplete.push(
      'response.incomplete',
      JSON.stringify({
        type: 'response.incomplete',
        response: {
          id: 'resp_1',
          status: 'incomplete',
          incomplete_details: { reason: 'max_output_tokens' },
          output: [],
        },
      }),
    );
    assert.equal(incomplete.ended(), true);
    assert.equal(incomplete.result().stopReason, 'max_output_tokens');
  });

  test('ignores unknown events, comments and unparsable data', () => {
    const accumulator = createResponsesStreamAccumulator();
    accumulator.push(undefined, '{not json');
    accumulator.push(undefined, '');
    accumulator.push(undefined, '42');
    accumulator.push('response.future_event', JSON.stringify({ type: 'response.future_event', x: 1 }));
    accumulator.push(
      undefined,
      JSON.stringify({ type: 'response.output_text.delta', output_index: 9, content_index: 0, delta: 'x' }),
    );
    assert.deepEqual(accumulator.result().messages, []);
    assert.equal(accumulator.ended(), false);
  });
});

describe('createResponsesStreamAccumulator on a long answer', () => {
  const ev = (type: string, fields: object) => ({ event: type, data: JSON.stringify({ type, ...fields }) });
  const start = [
    ev('response.created', { response: { id: 'resp_long', status: 'in_progress', output: [] } }),
    ev('response.output_item.added', {
      output_index: 0,
      item: { id: 'msg_long', type: 'message', role: 'assistant', content: [] },
    }),
    ev('response.content_part.added', {
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '' },
    }),
  ];
  const deltas = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      ev('response.output_text.delta', { output_index: 0, content_index: 0, delta: `${i % 10}ab ` }),
    );
  const text = (n: number) => Array.from({ length: n }, (_, i) => `${i % 10}ab `).join('');

  test('thousands of deltas, cut before the end, are assembled in order; held counts them', () => {
    const accumulator = createResponsesStreamAccumulator();
    for (const { event, data } of [...start, ...deltas(3000)]) accumulator.push(event, data);
    assert.ok(accumulator.held() >= 3000 * 4);
    assert.deepEqual(accumulator.result().message.content, [{ kind: 'text', text: text(3000) }]);
  });

  test('dropContent keeps how the answer ended and its usage, not its content', () => {
    const accumulator = createResponsesStreamAccumulator();
    for (const { event, data } of [...start, ...deltas(100)]) accumulator.push(event, data);
    accumulator.dropContent();
    assert.equal(accumulator.held(), 0);
    const done = ev('response.completed', {
      response: {
        id: 'resp_long',
        status: 'completed',
        output: [
          {
            id: 'msg_long',
            type: 'message',
            role: 'assistant',
            content: [{ type: 'output_text', text: text(100) }],
          },
        ],
        usage: { input_tokens: 3, output_tokens: 100, total_tokens: 103 },
      },
    });
    for (const { event, data } of [...deltas(100), done]) accumulator.push(event, data);
    assert.equal(accumulator.ended(), true);
    assert.equal(accumulator.held(), 0);
    const result = accumulator.result();
    assert.equal(result.responseId, 'resp_long');
    assert.ok(result.usage);
    assert.deepEqual(result.message.content, []);
  });
});
