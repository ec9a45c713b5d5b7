/**
 * Logged messages for the received-view tests: parts and messages in the log's normalized form,
 * a log-like text, and the gateway's default settings for what the model received.
 */
import { createHash } from 'node:crypto';
import type { LogPart, PageMessage } from '../../server/log-request-view.ts';
import type { ReceivedSettings, ViewDecisions } from '../../server/received-view.ts';

export const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

export const settings: ReceivedSettings = {
  softTrim: { maxChars: 4000, headChars: 1500, tailChars: 1500 },
  hardClear: { enabled: true, placeholder: '[Old tool result content cleared]' },
  imageReplay: { enabled: true, keepTurns: 3 },
};
export const none: ViewDecisions = { trims: {}, setAside: {}, pruning: null };

export function text(t: string): LogPart {
  return { kind: 'text', text: t };
}
export function image(sha256: string): LogPart {
  return { kind: 'image', attachment: { sha256, mediaType: 'image/png', bytes: 68, width: 1, height: 1 } };
}
export function result(callId: string, content: LogPart[], toolName = 'read_file'): LogPart {
  return { kind: 'tool-result', callId, toolName, failed: false, content };
}
export function call(id: string, name = 'read_file'): LogPart {
  return { kind: 'tool-call', id, name, args: '{}' };
}
export const msg = (seq: number, role: string, content: LogPart[]): PageMessage => ({ seq, role, content });

/** A log-like text of `n` characters (ASCII, so characters are code points). */
export function longText(n: number): string {
  let out = '';
  for (let i = 0; out.length < n; i++) out += `line ${i} of the tool output\n`;
  return out.slice(0, n);
}
