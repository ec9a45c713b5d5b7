/**
 * Refusals of `prompt_cache_key` as a field the server does not accept, one row per wording seen
 * (unknown-field-refusal.ts), through both OpenAI-format classifiers; and the refusals that look
 * alike but are not one (another field, a nested one, a bad value, another status).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyOpenaiRefusal } from './openai/openai-refusal-classifier.ts';
import type { Refusal } from './provider.ts';
import { classifyResponsesRefusal } from './responses/responses-refusal-classifier.ts';
import { UNKNOWN_FIELD_ROWS, refusesField } from './unknown-field-refusal.ts';

const openaiError = (message: string, param: string | null = null, code: string | null = null) =>
  JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } });
const googleError = (message: string) =>
  JSON.stringify([
    {
      error: {
        code: 400,
        message,
        status: 'INVALID_ARGUMENT',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.BadRequest',
            fieldViolations: [{ description: message }],
          },
        ],
      },
    },
  ]);
const pydanticEntry = (loc: unknown[], type = 'extra_forbidden', msg = 'Extra inputs are not permitted') => ({
  type,
  loc,
  msg,
  input: 'chat-1',
});

interface Row {
  name: string;
  status: number;
  body: string;
}

// A refusal of the top-level prompt_cache_key, in each wording and shape seen for unknown fields.
const refusals: Row[] = [
  {
    name: 'OpenAI unknown_parameter',
    status: 400,
    body: openaiError("Unknown parameter: 'prompt_cache_key'.", 'prompt_cache_key', 'unknown_parameter'),
  },
  {
    name: 'OpenAI unknown_parameter, named only by param and code',
    status: 400,
    body: openaiError('This parameter is not accepted.', 'prompt_cache_key', 'unknown_parameter'),
  },
  {
    name: 'OpenAI unsupported_parameter',
    status: 400,
    body: openaiError(
      "Unsupported parameter: 'prompt_cache_key' is not supported with this model.",
      'prompt_cache_key',
      'unsupported_parameter',
    ),
  },
  {
    name: 'Unrecognized request argument (OpenAI envelope, no param)',
    status: 400,
    body: openaiError('Unrecognized request argument supplied: prompt_cache_key'),
  },
  {
    name: 'Unrecognized request arguments, a list',
    status: 400,
    body: openaiError('Unrecognized request arguments supplied: cache_seed, prompt_cache_key'),
  },
  {
    name: 'Google APIs, a JSON array with INVALID_ARGUMENT',
    status: 400,
    body: googleError('Invalid JSON payload received. Unknown name "prompt_cache_key": Cannot find field.'),
  },
  {
    name: 'FastAPI 422, Pydantic v2 detail list',
    status: 422,
    body: JSON.stringify({ detail: [pydanticEntry(['body', 'prompt_cache_key'])] }),
  },
  {
    name: 'FastAPI 422, Pydantic v1 detail list',
    status: 422,
    body: JSON.stringify({
      detail: [
        pydanticEntry(['body', 'prompt_cache_key'], 'value_error.extra', 'extra fields not permitted'),
      ],
    }),
  },
  {
    name: 'Pydantic detail list inside an OpenAI-style envelope (several extra fields)',
    status: 422,
    body: JSON.stringify({
      object: 'Error',
      detail: [pydanticEntry(['body', 'safe_mode']), pydanticEntry(['body', 'prompt_cache_key'])],
      type: 'invalid_request_error',
      code: 3001,
    }),
  },
  {
    name: 'Pydantic errors quoted as Python text in the message (vLLM-style BadRequestError)',
    status: 400,
    body: JSON.stringify({
      object: 'error',
      message:
        "[{'type': 'extra_forbidden', 'loc': ('body', 'prompt_cache_key'), 'msg': 'Extra inputs are not permitted', 'input': 'chat-1'}]",
      type: 'BadRequestError',
      param: null,
      code: 400,
    }),
  },
  {
    name: 'extra input named in the message',
    status: 400,
    body: openaiError("Extra inputs are not permitted, field: 'prompt_cache_key', value: 'chat-1'"),
  },
  {
    name: 'serde unknown field, plain text (422)',
    status: 422,
    body: 'Failed to deserialize the JSON body into the target type: unknown field `prompt_cache_key`, expected one of `model`, `messages` at line 1 column 80',
  },
];

// Alike, but not a refusal of the top-level prompt_cache_key.
const others: Array<Row & { expect: Refusal }> = [
  {
    name: 'another unknown parameter',
    status: 400,
    body: openaiError("Unknown parameter: 'reasoning'.", 'reasoning', 'unknown_parameter'),
    expect: { kind: 'other' },
  },
  {
    name: 'a nested field of the same name',
    status: 400,
    body: openaiError(
      "Unknown parameter: 'input[4].prompt_cache_key'.",
      'input[4].prompt_cache_key',
      'unknown_parameter',
    ),
    expect: { kind: 'other' },
  },
  {
    name: 'a nested field, Pydantic',
    status: 422,
    body: JSON.stringify({ detail: [pydanticEntry(['body', 'messages', 0, 'prompt_cache_key'])] }),
    expect: { kind: 'other' },
  },
  {
    name: 'a nested field, Google',
    status: 400,
    body: googleError(
      `Invalid JSON payload received. Unknown name "prompt_cache_key" at 'request.tools[0]': Cannot find field.`,
    ),
    expect: { kind: 'other' },
  },
  {
    name: 'a bad value of the field, not an unknown field',
    status: 400,
    body: openaiError(
      "Invalid type for 'prompt_cache_key': expected a string, but got an integer instead.",
      'prompt_cache_key',
      'invalid_type',
    ),
    expect: { kind: 'other' },
  },
  {
    name: 'a Pydantic error of another type on the field',
    status: 422,
    body: JSON.stringify({
      detail: [
        pydanticEntry(
          ['body', 'prompt_cache_key'],
          'string_too_long',
          'String should have at most 64 characters',
        ),
      ],
    }),
    expect: { kind: 'other' },
  },
  {
    name: 'an unknown field wording on a status that is not a refusal of the request',
    status: 500,
    body: openaiError('Unrecognized request argument supplied: prompt_cache_key'),
    expect: { kind: 'transient' },
  },
  {
    name: 'a context overflow that quotes the request',
    status: 400,
    body: openaiError(
      "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. (prompt_cache_key was set)",
      null,
      'context_length_exceeded',
    ),
    expect: { kind: 'context-overflow' },
  },
];

describe('a refusal of prompt_cache_key as a field the server does not accept', () => {
  for (const row of refusals) {
    test(row.name, () => {
      assert.deepEqual(classifyOpenaiRefusal(row.status, row.body, 0), { kind: 'cache-key-refused' });
      assert.deepEqual(classifyResponsesRefusal(row.status, row.body, 0), { kind: 'cache-key-refused' });
    });
  }

  test('every wording of the table is matched by a row above', () => {
    for (const row of UNKNOWN_FIELD_ROWS) {
      const pattern = row.pattern('prompt_cache_key');
      assert.ok(
        refusals.some((r) => texts(r.body).some((t) => pattern.test(t))),
        row.seenFrom,
      );
    }
  });

  test('the field is a parameter: other fields are asked about the same way', () => {
    const body = openaiError("Unknown parameter: 'cache_control'.", 'cache_control', 'unknown_parameter');
    assert.equal(refusesField(400, body, 'cache_control'), true);
    assert.equal(refusesField(400, body, 'prompt_cache_key'), false);
    // A field name is matched as written, never as a pattern.
    assert.equal(refusesField(400, openaiError("Unknown parameter: 'aXb'. (a.b is known)"), 'a.b'), false);
  });
});

describe('alike, but not that refusal', () => {
  for (const row of others) {
    test(row.name, () => {
      assert.deepEqual(classifyOpenaiRefusal(row.status, row.body, 0), row.expect);
      assert.deepEqual(classifyResponsesRefusal(row.status, row.body, 0), row.expect);
    });
  }
});

/** The strings a body holds (a plain-text body is one), as the classifier reads them. */
function texts(body: string): string[] {
  const out: string[] = [];
  const visit = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(visit);
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach(visit);
  };
  try {
    visit(JSON.parse(body));
  } catch {
    out.push(body);
  }
  return out;
}
