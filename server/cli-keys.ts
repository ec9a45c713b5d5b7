/**
 * `oda-gateway keys new`: makes a random team (or admin) key and prints it with the hash the config
 * holds (`teams[].keys` / `adminKeys`). Only the hash goes into the config; the key is shown once.
 */
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../lib/sha256.ts';

interface Io {
  out(line: string): void;
  err(line: string): void;
}

/** A new random key (`oda_` + 32 random bytes, base64url) and its `sha256:<hex>` for the config. */
export function newKey(bytes: (n: number) => Buffer = randomBytes): { key: string; hash: string } {
  const key = `oda_${bytes(32).toString('base64url')}`;
  return { key, hash: `sha256:${sha256Hex(key)}` };
}

/** Runs `keys new`; returns the exit code (0 done, 2 usage). */
export async function keysNew(args: readonly string[], io: Io): Promise<number> {
  const json = args.includes('--json');
  if (args.some((a) => a !== '--json')) {
    io.err('usage: oda-gateway keys new [--json]');
    return 2;
  }
  const { key, hash } = newKey();
  if (json) {
    io.out(JSON.stringify({ key, hash }));
    return 0;
  }
  io.out(`key:  ${key}`);
  io.out(`hash: ${hash}`);
  io.err(
    'Give the key to its holder (it is not stored anywhere); put the hash in teams[].keys or adminKeys.',
  );
  return 0;
}
