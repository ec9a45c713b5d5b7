/**
 * Chats for the log viewer's browser tests and its README screenshot, made the way clients make
 * them: real model calls through a running gateway (OpenAI and Anthropic wire formats) in front of
 * the fake provider, so the log holds what the gateway really records (trims, images set aside).
 */
import { deflateSync, crc32 } from 'node:zlib';

/** A gateway config that makes the demo chats' mechanisms run: `small-*` models have an 8k window. */
export const DEMO_MODELS = { 'small-*': { contextWindow: 8000 } } as const;

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** An opaque RGB PNG with a diagonal gradient from `from` to `to` (each [r, g, b]). */
export function gradientPng(width: number, height: number, from: number[], to: number[]): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    for (let x = 0; x < width; x++) {
      const t = (x / width + y / height) / 2;
      for (let c = 0; c < 3; c++) row[1 + x * 3 + c] = Math.round(from[c]! + (to[c]! - from[c]!) * t);
    }
    rows.push(row);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export interface CallOptions {
  /** The gateway's base URL. */
  url: string;
  session: string;
  key?: string;
}

async function post(opts: CallOptions, path: string, body: unknown, extra: Record<string, string> = {}) {
  const res = await fetch(`${opts.url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-session-id': opts.session,
      ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}),
      ...extra,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return { status: res.status, sessionId: res.headers.get('x-session-id'), headers: res.headers, body: text };
}

/** An OpenAI Chat Completions call. */
export function openaiCall(opts: CallOptions, body: Record<string, unknown>, extra?: Record<string, string>) {
  return post(opts, '/v1/chat/completions', body, extra);
}

/** An Anthropic Messages call. */
export function anthropicCall(
  opts: CallOptions,
  body: Record<string, unknown>,
  extra?: Record<string, string>,
) {
  return post(
    opts,
    '/v1/messages',
    { max_tokens: 256, ...body },
    { 'anthropic-version': '2023-06-01', ...extra },
  );
}

/** A build log of `lines` lines with a line in the middle that names `middle`. */
export function longToolOutput(lines: number, middle: string): string {
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    out.push(
      i === Math.floor(lines / 2)
        ? `FAIL ${middle}`
        : `ok ${String(i).padStart(5, '0')} packages/core/src/module-${i % 97}.test.ts (${(i * 7) % 300} ms)`,
    );
  }
  return out.join('\n');
}

/**
 * An agent turn whose tool result is trimmed at the compaction point: the model `small-demo`
 * (8k window) gets a 40k-char test log; returns the log text.
 */
export async function trimmedToolResultChat(
  opts: CallOptions,
  middle = 'MIDDLE-OF-THE-LOG',
): Promise<string> {
  const log = longToolOutput(700, middle);
  const messages: Array<Record<string, unknown>> = [
    { role: 'system', content: 'You are a coding agent. Use the tools to fix failing tests.' },
    { role: 'user', content: 'The CI run is red. Find the failing test and tell me why it fails.' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_run_tests',
          type: 'function',
          function: { name: 'run_tests', arguments: '{"scope":"all"}' },
        },
      ],
    },
    { role: 'tool', tool_call_id: 'call_run_tests', content: log },
  ];
  const tools = [
    {
      type: 'function',
      function: { name: 'run_tests', description: 'Runs the test suite', parameters: { type: 'object' } },
    },
  ];
  await openaiCall(opts, { model: 'small-demo', messages, tools });
  return log;
}

/**
 * A user turn with two screenshots sent to a provider that accepts one image per request: the
 * gateway sets the older aside with a note and resends (the fake provider's `imageLimit: 1`).
 */
export async function imageSetAsideChat(opts: CallOptions): Promise<Buffer[]> {
  const first = gradientPng(160, 100, [43, 76, 126], [120, 190, 230]);
  const second = gradientPng(160, 100, [200, 90, 40], [250, 210, 120]);
  await anthropicCall(opts, {
    model: 'claude-demo',
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Here is the login page before and after my change. What moved?' },
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: first.toString('base64') },
          },
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: second.toString('base64') },
          },
        ],
      },
    ],
  });
  return [first, second];
}
