import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OdaError } from '../lib/errors.ts';
import { parseInputBody, parseMessagesBody } from './parse-body.ts';

/** The 400 a body is refused with: its message and the field it names. */
function refusal(parse: (body: Record<string, unknown>) => unknown, body: Record<string, unknown>) {
  try {
    parse(body);
  } catch (e) {
    assert.ok(e instanceof OdaError);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'ODA_ERR_INVALID_REQUEST');
    return [e.message, e.param];
  }
  assert.fail('the body was accepted');
}

describe('parseBody', () => {
  test('Chat Completions and Messages: a model and a messages array', () => {
    assert.deepEqual(parseMessagesBody({ model: 'gpt-4.1', messages: [], extra: 1 }), { model: 'gpt-4.1' });
    assert.deepEqual(refusal(parseMessagesBody, { messages: [] }), ['model must be a string', 'model']);
    assert.deepEqual(refusal(parseMessagesBody, { model: '', messages: [] }), [
      'model must not be empty',
      'model',
    ]);
    assert.deepEqual(refusal(parseMessagesBody, { model: 'm', messages: 'hi' }), [
      'messages must be an array',
      'messages',
    ]);
    assert.deepEqual(refusal(parseMessagesBody, { model: 'm' }), ['messages must be an array', 'messages']);
  });

  test('Responses: a model and, when present, an input, a string or a list of items', () => {
    assert.deepEqual(parseInputBody({ model: 'gpt-5', input: 'Hi' }), { model: 'gpt-5' });
    assert.deepEqual(parseInputBody({ model: 'gpt-5', input: [{ role: 'user', content: 'Hi' }] }), {
      model: 'gpt-5',
    });
    // `input` is optional in the API: a prompt template, or nothing new after a previous response.
    assert.deepEqual(parseInputBody({ model: 'gpt-5', prompt: { id: 'pmpt_1' } }), { model: 'gpt-5' });
    assert.deepEqual(parseInputBody({ model: 'gpt-5', previous_response_id: 'resp_x' }), {
      model: 'gpt-5',
    });
    for (const input of [5, null, { role: 'user' }, true]) {
      assert.deepEqual(refusal(parseInputBody, { model: 'gpt-5', input }), [
        'input must be a string or an array',
        'input',
      ]);
    }
    assert.deepEqual(refusal(parseInputBody, { model: 7, input: 'Hi' }), ['model must be a string', 'model']);
    // The API takes a prompt template's own model when `model` is left out; the gateway cannot.
    assert.deepEqual(refusal(parseInputBody, { prompt: { id: 'pmpt_1' } }), [
      'model is required: the gateway chooses the provider by model and cannot read the model of a prompt template, so name it in the request',
      'model',
    ]);
    assert.deepEqual(refusal(parseInputBody, { model: null, input: 'Hi' }), [
      'model is required: the gateway chooses the provider by model',
      'model',
    ]);
    // A Chat Completions body sent to /v1/responses names the field it lacks.
    assert.deepEqual(refusal(parseInputBody, { model: 'gpt-5', messages: [] }), [
      'input must be a string or an array',
      'input',
    ]);
  });
});
