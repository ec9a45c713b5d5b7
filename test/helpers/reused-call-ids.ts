/**
 * The check every request normalizer passes for a call id handed out again (one id for two calls,
 * as some agents do): each tool result is named by the call nearest before it, and what the log
 * holds of an earlier request is what the longer one normalizes to. Written once for every format,
 * which differ only in how a call and its result are written.
 */
import assert from 'node:assert/strict';
import type { NormalizedRequest } from '../../providers/provider.ts';

export function assertReusedCallIdsNamed(
  normalize: (messages: unknown[]) => NormalizedRequest,
  call: (name: string) => unknown,
  result: (content: string) => unknown,
): void {
  const earlier = [
    { role: 'user', content: 'go' },
    call('exec'),
    result('old'),
    call('read_file'),
    result('new'),
  ];
  const names = (messages: unknown[]) =>
    normalize(messages).messages.flatMap((m) =>
      m.content.flatMap((p) => (p.kind === 'tool-result' ? [[p.callId, p.toolName]] : [])),
    );
  assert.deepEqual(names(earlier), [
    ['call_0', 'exec'],
    ['call_0', 'read_file'],
  ]);
  const later = [...earlier, call('grep'), result('more')];
  assert.deepEqual(
    normalize(later).messages.slice(0, earlier.length),
    normalize(earlier).messages,
    'what the log holds of the earlier request is what the longer one normalizes to',
  );
}
