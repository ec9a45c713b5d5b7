import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildUpstreamUrl, forwardedQuery } from './upstream-url.ts';

test('joins the base URL and the fixed API path, with only the given query', () => {
  assert.equal(
    buildUpstreamUrl('https://api.anthropic.com', '/v1/messages'),
    'https://api.anthropic.com/v1/messages',
  );
  assert.equal(
    buildUpstreamUrl('https://api.openai.com/v1/', '/chat/completions'),
    'https://api.openai.com/v1/chat/completions',
  );
  assert.equal(
    buildUpstreamUrl('http://127.0.0.1:9001', '/v1/messages', { beta: 'true' }),
    'http://127.0.0.1:9001/v1/messages?beta=true',
  );
});

test('refuses a path that would leave the base URL', () => {
  for (const bad of [
    'munity://x/v1/messages',
    '//evil.example/v1',
    'v1/messages',
    '/v1/../../x',
    '/v1?x=1',
    '/a\\b',
  ]) {
    assert.throws(
      () => buildUpstreamUrl('https://api.anthropic.com/base', bad),
      /refusing to call the provider/,
      bad,
    );
  }
  // A host-less base with a path: the result stays under the path.
  assert.throws(() => buildUpstreamUrl('https://api.anthropic.com', 'munity://x'), /refusing/);
});

test('forwards only allowed query parameters with allowed values', () => {
  assert.deepEqual(forwardedQuery({ beta: 'true', 'api-version': '../../admin' }, { beta: ['true'] }), {
    beta: 'true',
  });
  assert.deepEqual(forwardedQuery({ beta: 'false' }, { beta: ['true'] }), {});
  assert.deepEqual(forwardedQuery({ beta: ['true', 'true'] }, { beta: ['true'] }), {});
});
