import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KnownTools } from './known-tools.ts';

const refs = (...names: string[]) => names.map((name) => ({ name, digest: `d-${name}` }));
const bytes = (text: string) => Buffer.from(text, 'utf8');

test('a list is known again only by the same bytes in the same format', () => {
  const known = new KnownTools();
  const sent = bytes('[{"name":"read","description":"aaa"}]');
  assert.equal(known.get('anthropic', sent), undefined);
  known.remember('anthropic', sent, refs('read'));
  assert.deepEqual(known.get('anthropic', bytes('[{"name":"read","description":"aaa"}]')), refs('read'));
  // Same length, other bytes: a changed definition is digested again.
  assert.equal(known.get('anthropic', bytes('[{"name":"read","description":"bbb"}]')), undefined);
  assert.equal(known.get('openai', sent), undefined);
});

test('what is remembered is a copy: the request buffer and the caller refs can change after', () => {
  const known = new KnownTools();
  const sent = bytes('[{"name":"grep"}]');
  const given = refs('grep');
  known.remember('openai', sent, given);
  sent[3] = 0x78;
  given[0]!.digest = 'changed';
  assert.deepEqual(known.get('openai', bytes('[{"name":"grep"}]')), refs('grep'));
});

test('bounded: the least recently used list goes first', () => {
  const known = new KnownTools(2);
  known.remember('f', bytes('[1]'), refs('one'));
  known.remember('f', bytes('[22]'), refs('two'));
  assert.ok(known.get('f', bytes('[1]')));
  known.remember('f', bytes('[333]'), refs('three'));
  assert.equal(known.size, 2);
  assert.ok(known.get('f', bytes('[1]')));
  assert.equal(known.get('f', bytes('[22]')), undefined);
  assert.ok(known.get('f', bytes('[333]')));
});
