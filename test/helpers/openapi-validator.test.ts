import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  anthropicMessage,
  anthropicStream,
  openaiCompletion,
  openaiStream,
} from '../fake-provider/fake-bodies.ts';
import {
  checkDocument,
  loadOpenApi,
  matchPath,
  validateResponse,
  validateSchema,
} from './openapi-validator.ts';

const doc = loadOpenApi();

/** Asserts there are problems and that one of them mentions `fragment`. */
function assertInvalid(problems: string[], fragment: string | RegExp): void {
  assert.ok(problems.length > 0, 'expected the body to be refused');
  const re =
    typeof fragment === 'string' ? new RegExp(fragment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : fragment;
  assert.ok(
    problems.some((p) => re.test(p)),
    `expected a problem matching ${String(re)}, got:\n${problems.join('\n')}`,
  );
}

describe('openapi.yaml', () => {
  it('compiles every schema in strict mode and names every operation', () => {
    assert.deepEqual(checkDocument(doc), []);
    assert.equal(doc.openapi, '3.1.0');
  });

  it('documents every route of the gateway', () => {
    const paths = Object.keys(doc.paths as object).sort();
    assert.deepEqual(paths, [
      '/healthz',
      '/metrics',
      '/openapi.yaml',
      '/readyz',
      '/ui',
      '/v1/chat/completions',
      '/v1/embeddings',
      '/v1/messages',
      '/v1/messages/count_tokens',
      '/v1/models',
      '/v1/models/{id}',
      '/v1/responses',
      '/v1/responses/compact',
      '/v1/responses/input_tokens',
      '/v1/responses/{id}',
      '/v1/responses/{id}/cancel',
      '/v1/responses/{id}/input_items',
      '/v1/sessions',
      '/v1/sessions/{id}',
      '/v1/sessions/{id}/attachments/{sha256}',
      '/v1/sessions/{id}/events',
      '/v1/sessions/{id}/received',
      '/v1/sessions/{id}/tail',
      '/v1/usage',
    ]);
  });
});

describe('validateResponse', () => {
  it('accepts the chat completion and message bodies providers send, with extra fields', () => {
    assert.deepEqual(
      validateResponse(doc, 'POST', '/v1/chat/completions', 200, openaiCompletion('gpt-x', 'hi')),
      [],
    );
    assert.deepEqual(
      validateResponse(doc, 'POST', '/v1/chat/completions', 200, {
        ...openaiCompletion('gpt-x', 'hi'),
        new_field: 1,
      }),
      [],
    );
    assert.deepEqual(
      validateResponse(doc, 'POST', '/v1/messages?beta=true', 200, anthropicMessage('claude-x', 'hi')),
      [],
    );
  });

  it('refuses bodies that do not match, naming the field', () => {
    const { choices: _choices, ...noChoices } = openaiCompletion('gpt-x', 'hi');
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/chat/completions', 200, noChoices),
      "must have required property 'choices'",
    );
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/chat/completions', 200, {
        ...openaiCompletion('gpt-x', 'hi'),
        object: 'list',
      }),
      '/object must be equal to constant',
    );
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/messages', 200, {
        ...anthropicMessage('claude-x', 'hi'),
        content: 'text',
      }),
      '/content must be array',
    );
  });

  it('resolves $ref responses and tells the two error shapes apart', () => {
    const openaiError = {
      error: { message: 'm', type: 'invalid_request_error', param: null, code: 'ODA_ERR_BAD_JSON' },
    };
    const anthropicError = { type: 'error', error: { type: 'invalid_request_error', message: 'm' } };
    assert.deepEqual(validateResponse(doc, 'POST', '/v1/chat/completions', 400, openaiError), []);
    assert.deepEqual(validateResponse(doc, 'POST', '/v1/messages', 400, anthropicError), []);
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/chat/completions', 404, anthropicError),
      "/error must have required property 'param'",
    );
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/messages', 404, openaiError),
      "must have required property 'type'",
    );
    // A provider refusal with an undocumented status falls to `default`.
    assert.deepEqual(validateResponse(doc, 'POST', '/v1/messages', 529, anthropicError), []);
  });

  it('matches path templates and ignores the query', () => {
    assert.equal(matchPath(doc, '/v1/sessions/chat-1/events?offset=2'), '/v1/sessions/{id}/events');
    assert.equal(matchPath(doc, '/v1/sessions/chat-1'), '/v1/sessions/{id}');
    assert.equal(matchPath(doc, '/v1/sessions'), '/v1/sessions');
    assert.equal(matchPath(doc, '/v1/sessions/a/b/events'), undefined);
    const page = {
      events: [
        {
          seq: 0,
          at: 1_700_000_000_000,
          type: 'message',
          role: 'user',
          content: [{ kind: 'text', text: 'hi' }],
        },
        {
          seq: 1,
          at: 1_700_000_000_001,
          type: 'response',
          requestId: 'r1',
          startedAt: 1_700_000_000_000,
          status: 200,
          ok: true,
          attempts: 1,
          latencyMs: 12,
          usage: { inputTokens: 3, outputTokens: 5 },
        },
      ],
      next: 2,
      next_offset: null,
    };
    assert.deepEqual(validateResponse(doc, 'GET', '/v1/sessions/chat-1/events?offset=0', 200, page), []);
    assertInvalid(
      validateResponse(doc, 'GET', '/v1/sessions/chat-1/events', 200, {
        ...page,
        events: [{ seq: 0, at: 1, type: 'message' }],
      }),
      "must have required property 'role'",
    );
    assertInvalid(
      validateResponse(doc, 'GET', '/v1/sessions/chat-1/events', 200, {
        events: [{ seq: 0, at: 1, type: 'mystery' }],
        next: 1,
        next_offset: null,
      }),
      '/events/0/type must be equal to one of the allowed values',
    );
  });

  it('checks session headers and snapshots', () => {
    const header = { version: 5, id: 'chat-1', createdAt: 1_700_000_000_000, cwd: '/srv/project', depth: 1 };
    assert.deepEqual(
      validateResponse(doc, 'GET', '/v1/sessions/chat-1', 200, {
        header,
        snapshot: { position: -1, values: {} },
      }),
      [],
    );
    assertInvalid(
      validateResponse(doc, 'GET', '/v1/sessions/chat-1', 200, {
        header,
        snapshot: { position: -2, values: {} },
      }),
      '/snapshot/position must be >= -1',
    );
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/sessions', 201, { header: { ...header, secret: true } }),
      'must NOT have additional properties (secret)',
    );
    assert.deepEqual(
      validateResponse(doc, 'GET', '/v1/sessions', 200, {
        object: 'list',
        data: [{ id: 'chat-1', createdAt: 1, eventCount: 0, lastActivityAt: 1 }],
        has_more: false,
        next_cursor: null,
        sessions: [{ id: 'chat-1', createdAt: 1, eventCount: 0, lastActivityAt: 1 }],
      }),
      [],
    );
  });

  it('keeps readyz statuses apart', () => {
    assert.deepEqual(validateResponse(doc, 'GET', '/readyz', 200, { status: 'ready', store: 'file' }), []);
    assert.deepEqual(
      validateResponse(doc, 'GET', '/readyz', 503, { status: 'unavailable', store: 'redis' }),
      [],
    );
    assertInvalid(
      validateResponse(doc, 'GET', '/readyz', 200, { status: 'unavailable', store: 'file' }),
      '/status must be equal to constant',
    );
  });

  it('refuses what the document does not describe', () => {
    assertInvalid(validateResponse(doc, 'GET', '/nope', 404, {}), 'path /nope is not documented');
    assertInvalid(validateResponse(doc, 'DELETE', '/healthz', 200, {}), 'DELETE /healthz is not documented');
    assertInvalid(validateResponse(doc, 'GET', '/healthz', 418, {}), 'status 418 is not documented');
    assertInvalid(
      validateResponse(doc, 'POST', '/v1/chat/completions', 200, '<html>', 'text/html'),
      'does not document content type text/html',
    );
  });

  it('takes content types with parameters', () => {
    assert.deepEqual(
      validateResponse(doc, 'GET', '/metrics', 200, '# HELP x\n', 'text/plain; version=0.0.4; charset=utf-8'),
      [],
    );
    assert.deepEqual(
      validateResponse(doc, 'POST', '/v1/messages', 200, 'event: ping\ndata: {}\n\n', 'text/event-stream'),
      [],
    );
  });
});

describe('validateSchema', () => {
  it('accepts the streamed chunks and events the providers send', () => {
    for (const ev of openaiStream('gpt-x', ['a', 'b'], true)) {
      if (ev.data === '[DONE]') continue;
      assert.deepEqual(
        validateSchema(doc, '#/components/schemas/ChatCompletionChunk', JSON.parse(ev.data)),
        [],
      );
    }
    for (const ev of anthropicStream('claude-x', ['a', 'b'])) {
      const data = JSON.parse(ev.data) as { type: string };
      assert.equal(data.type, ev.event);
      assert.deepEqual(validateSchema(doc, '#/components/schemas/AnthropicStreamEvent', data), []);
    }
  });

  it('refuses a malformed stream event and an unknown component', () => {
    assertInvalid(
      validateSchema(doc, '#/components/schemas/AnthropicStreamEvent', {
        type: 'content_block_delta',
        delta: {},
      }),
      "must have required property 'index'",
    );
    assertInvalid(
      validateSchema(doc, '#/components/schemas/AnthropicStreamEvent', {
        type: 'message_start',
        message: { type: 'message' },
      }),
      '/message must have required property',
    );
    assert.throws(() => validateSchema(doc, '#/components/schemas/Nope', {}), /unresolved \$ref/);
  });
});
