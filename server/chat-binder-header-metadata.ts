/**
 * The `x-session-*` header metadata a bound request gives the chat it creates. Apart from the
 * binder because it only reads and checks headers: it is the binder's cheap refusal, run before any
 * normalizing or attachment writing.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isChatId } from '../chat-log/chat-id.ts';
import { OdaError } from '../lib/errors.ts';
import type { Caller } from './auth.ts';

function one(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Header metadata a request may give for a chat it creates (`x-session-*`). */
export function headerMetadata(headers: IncomingHttpHeaders, caller: Caller): Record<string, unknown> {
  const depth = one(headers, 'x-session-depth');
  const meta: Record<string, unknown> = {
    cwd: one(headers, 'x-session-cwd'),
    parent: one(headers, 'x-session-parent'),
    origin: one(headers, 'x-session-origin'),
    preset: one(headers, 'x-session-preset'),
    team: caller.team,
  };
  if (depth !== undefined) {
    if (!/^\d{1,6}$/.test(depth)) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'x-session-depth must be a whole number >= 0', {
        param: 'x-session-depth',
      });
    }
    meta.depth = Number(depth);
  }
  if (meta.parent !== undefined && !isChatId(meta.parent)) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      'x-session-parent must be a chat id (1-128 of A-Za-z0-9._:-, not . or ..)',
      {
        param: 'x-session-parent',
      },
    );
  }
  return meta;
}
