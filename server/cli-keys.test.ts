import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { keysNew, newKey } from './cli-keys.ts';
import { parseConfig } from '../config/config.ts';
import { resolveCaller } from './auth.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

test('keys new prints a fresh key and the sha256 of exactly that key', async () => {
  const { io, out } = capture();
  assert.equal(await keysNew([], io), 0);
  const key = /^key: {2}(oda_[A-Za-z0-9_-]{43})$/.exec(out[0] ?? '')?.[1];
  const hash = /^hash: (sha256:[0-9a-f]{64})$/.exec(out[1] ?? '')?.[1];
  assert.ok(key && hash, out.join('\n'));
  assert.equal(hash, `sha256:${createHash('sha256').update(key).digest('hex')}`);
  const again = capture();
  await keysNew([], again.io);
  assert.notEqual(again.out[0], out[0], 'every key is new');
});

test('keys new --json; unknown arguments are a usage error', async () => {
  const { io, out } = capture();
  assert.equal(await keysNew(['--json'], io), 0);
  const { key, hash } = JSON.parse(out[0] ?? '') as { key: string; hash: string };
  assert.equal(hash, `sha256:${createHash('sha256').update(key).digest('hex')}`);
  assert.equal(
    newKey(() => Buffer.alloc(32)).key,
    `oda_${'A'.repeat(43)}`,
    'the key is the random bytes, base64url',
  );
  const bad = capture();
  assert.equal(await keysNew(['--bits', '512'], bad.io), 2);
  assert.match(bad.err.join('\n'), /usage: oda-gateway keys new/);
});

test('the printed hash is accepted by the config and lets the key in', () => {
  const { key, hash } = newKey();
  const config = parseConfig({ teams: [{ name: 'research', keys: [hash] }] });
  assert.equal(resolveCaller(config, { authorization: `Bearer ${key}` }).team, 'research');
  assert.equal(resolveCaller(config, { 'x-api-key': key }).team, 'research');
  assert.throws(() => resolveCaller(config, { authorization: `Bearer ${key}x` }), /invalid team key/);
});
