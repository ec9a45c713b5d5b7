import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { validateHeader, isAbsoluteCwd } from './header.ts';
import { OdaError } from '../lib/errors.ts';

const ok = { version: 5, id: 'chat-1', createdAt: 1_700_000_000_000, cwd: '/home/u/project' };

function refusedWith(raw: unknown, message: string | RegExp): OdaError {
  let caught: unknown;
  assert.throws(() => {
    try {
      validateHeader(raw);
    } catch (err) {
      caught = err;
      throw err;
    }
  });
  assert.ok(caught instanceof OdaError, 'an OdaError');
  if (typeof message === 'string') assert.equal(caught.message, message);
  else assert.match(caught.message, message);
  assert.equal(caught.status, 400);
  return caught;
}

describe('validateHeader', () => {
  test('accepts a full v4 header and returns it', () => {
    const full = {
      ...ok,
      parent: 'p',
      seeded: true,
      inheritedEvents: 3,
      origin: 'task',
      depth: 1,
      preset: 'default',
      team: 'research',
    };
    assert.deepEqual(validateHeader(full), full);
    assert.deepEqual(validateHeader({ version: 5, id: 'x', createdAt: 0 }), {
      version: 5,
      id: 'x',
      createdAt: 0,
    });
  });

  test('id must be a string', () => {
    for (const id of [undefined, 1, null, ['a'], { a: 1 }]) refusedWith({ ...ok, id }, 'id must be a string');
    const { id: _id, ...noId } = ok;
    assert.equal(refusedWith(noId, 'id must be a string').param, 'id');
  });

  test('createdAt must be a non-negative safe integer', () => {
    const msg = 'session metadata createdAt must be a non-negative safe integer';
    for (const createdAt of [-1, 1.5, -0, NaN, Infinity, 2 ** 53, '1', null, undefined]) {
      refusedWith({ ...ok, createdAt }, msg);
    }
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (createdAt) => {
        assert.equal(validateHeader({ ...ok, createdAt }).createdAt, createdAt);
      }),
    );
  });

  test('cwd must be absolute', () => {
    for (const cwd of ['relative/dir', './x', '', 'C:\\work', '~/x', '/with\0nul', 7, null]) {
      refusedWith({ ...ok, cwd }, 'cwd must be absolute');
    }
    assert.equal(isAbsoluteCwd('/'), true);
    assert.equal(validateHeader({ ...ok, cwd: '/a b/ü' }).cwd, '/a b/ü');
  });

  test('checks run in order: id, createdAt, cwd, lossless, schema', () => {
    refusedWith({ id: 1, createdAt: -1, cwd: 'x' }, 'id must be a string');
    refusedWith({ id: 'a', createdAt: -1, cwd: 'x' }, /createdAt/);
    refusedWith({ id: 'a', createdAt: 1, cwd: 'x', depth: NaN }, 'cwd must be absolute');
    refusedWith(
      { id: 'a', createdAt: 1, depth: NaN, version: 9 },
      'session metadata must be losslessly JSON-serializable',
    );
  });

  test('session metadata must be losslessly JSON-serializable', () => {
    const msg = 'session metadata must be losslessly JSON-serializable';
    const err = refusedWith({ ...ok, preset: undefined }, msg);
    assert.match(String((err.cause as Error).message), /metadata\.preset is an undefined member/);
    refusedWith({ ...ok, depth: -0 }, msg);
    refusedWith({ ...ok, origin: new Date(0) }, msg);
    refusedWith({ ...ok, cwd: undefined }, msg);
  });

  test('then the v4 schema, naming the field', () => {
    refusedWith({ ...ok, version: 3 }, /^invalid chat log header: version: /);
    refusedWith({ ...ok, depth: -1 }, /^invalid chat log header: depth: /);
    refusedWith({ ...ok, parent: 5 }, /^invalid chat log header: parent: /);
    refusedWith({ ...ok, color: 'red' }, 'invalid chat log header: unknown field "color"');
    refusedWith([1], 'session metadata must be a JSON object');
    refusedWith(null, 'session metadata must be a JSON object');
  });
});
