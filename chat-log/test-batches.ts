/** Builders shared by the chat-log store tests: headers, new events, and an OdaError matcher. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { isOdaError } from '../lib/errors.ts';
import type { Header, NewEvent } from './format/current.ts';
import { FileLogBackend } from './store-file.ts';

export const T0 = Date.UTC(2026, 0, 1);

export const hdr = (id: string, extra: Partial<Header> = {}): Header => ({
  version: 5,
  id,
  createdAt: T0,
  ...extra,
});

export const say = (text: string, role: 'user' | 'model' = 'user'): NewEvent => ({
  type: 'message',
  role,
  content: [{ kind: 'text', text }],
});

/**
 * The file of a new chat `id` in the file store of `dataDir`: `count` user messages (`m0`, `m1`...,
 * each padded with dots to `size` characters), appended 500 at a time.
 */
export async function chatFileOf(dataDir: string, id: string, count: number, size = 1): Promise<string> {
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id, createdAt: 1 });
  for (let at = 0; at < count; at += 500) {
    const n = Math.min(500, count - at);
    await backend.append(
      id,
      Array.from({ length: n }, (_, i) => say(`m${at + i}`.padEnd(size, '.'))),
      10,
    );
  }
  await backend.close();
  return join(dataDir, 'chats', `${id}.jsonl`);
}

export const request = (settings: Record<string, unknown>): NewEvent =>
  ({
    type: 'request',
    requestId: 'r1',
    format: 'openai',
    provider: 'p',
    model: 'm',
    settings,
    tools: [],
  }) as NewEvent;

/** An `assert.rejects` check: an OdaError with this status, code and (optionally) message. */
export const rejectsWith = (status: number, code: string, message?: RegExp) => (err: unknown) => {
  assert.ok(isOdaError(err), `expected an OdaError, got ${String(err)}`);
  assert.equal(err.status, status);
  assert.equal(err.code, code);
  if (message) assert.match(err.message, message);
  return true;
};
