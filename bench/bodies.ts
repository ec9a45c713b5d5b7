/**
 * Request bodies for the benchmarks, deterministic from a seed: a small chat (~2 KB) in both wire
 * formats, large Anthropic requests full of long tool results and images, and the long chat's turns.
 */
import { makePng } from './png.ts';

export type Format = 'openai' | 'anthropic';

export const MODELS: Readonly<Record<Format, string>> = {
  openai: 'gpt-4o-mini',
  anthropic: 'claude-sonnet-4-5',
};
export const PATHS: Readonly<Record<Format, string>> = {
  openai: '/v1/chat/completions',
  anthropic: '/v1/messages',
};

/** Headers a client of the format sends (a pass-through credential; the fake accepts anything). */
export function clientHeaders(format: Format): Record<string, string> {
  return format === 'openai'
    ? { 'content-type': 'application/json', authorization: 'Bearer sk-bench' }
    : { 'content-type': 'application/json', 'x-api-key': 'sk-ant-bench', 'anthropic-version': '2023-06-01' };
}

/** A small seeded PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the a of to and in is for on that with as it by this be are from at or an was file function return ' +
  'const value error test build server request response chat model tool result image cache token line ' +
  'path config module import export async await promise string number object array type interface ' +
  'gateway provider stream event message session update check run pass fail debug trace log write read'
).split(' ');

/** About `chars` characters of word salad with line breaks, like code output or prose. */
export function text(chars: number, random: () => number): string {
  const parts: string[] = [];
  let n = 0;
  let line = 0;
  while (n < chars) {
    const w = WORDS[Math.floor(random() * WORDS.length)]!;
    parts.push(w);
    n += w.length + 1;
    line += w.length + 1;
    if (line > 70) {
      parts.push('\n');
      line = 0;
    } else parts.push(' ');
  }
  return parts.join('').slice(0, chars);
}

/** A ~2 KB chat completion request: system prompt and three earlier turns. */
export function smallChat(format: Format, stream: boolean, seed = 1): Record<string, unknown> {
  const r = rng(seed);
  const system = `You are a careful coding assistant. ${text(560, r)}`;
  const turns = [
    { role: 'user', content: text(420, r) },
    { role: 'assistant', content: text(420, r) },
    { role: 'user', content: text(420, r) },
  ];
  if (format === 'openai') {
    return {
      model: MODELS.openai,
      messages: [{ role: 'system', content: system }, ...turns],
      max_tokens: 256,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
  }
  return {
    model: MODELS.anthropic,
    max_tokens: 256,
    system,
    messages: turns,
    ...(stream ? { stream: true } : {}),
  };
}

/** The fake provider's answer in the overhead benchmark's conversations (short, like a tool call turn). */
export const SMALL_CHAT_ANSWER = 'Hello from the fake provider.';

/**
 * Turn `turn` (0-based) of a conversation that starts as `smallChat`: every earlier turn added the
 * model's `answer` (what the fake provider answers, sent back as the client would) and a short user
 * message, so each request continues its chat instead of repeating one history (which the gateway
 * would log as a regenerated answer, in a branch). About 2 KB at turn 0, ~110 bytes more per turn.
 */
export function conversationTurn(
  format: Format,
  stream: boolean,
  turn: number,
  answer = SMALL_CHAT_ANSWER,
): Record<string, unknown> {
  const body = smallChat(format, stream);
  const messages = [...(body.messages as unknown[])];
  for (let t = 1; t <= turn; t++) {
    messages.push({ role: 'assistant', content: answer }, { role: 'user', content: `Go on with step ${t}.` });
  }
  return { ...body, messages };
}

export interface LargeBodyOptions {
  /** Approximate size of the JSON body in bytes. */
  bytes: number;
  seed?: number;
  /** Characters of each tool result's text (drawn between min and max). */
  toolResultChars?: [number, number];
  /** Put an image (noise PNG of about imageBytes) in every n-th tool result; 0 for none. */
  imageEvery?: number;
  imageBytes?: number;
  model?: string;
  /** Stop after this many tool results even when `bytes` is not reached. */
  maxToolResults?: number;
}

export interface LargeBody {
  body: Record<string, unknown>;
  json: string;
  toolResults: number;
  images: number;
  messages: number;
}

/**
 * An Anthropic Messages request of about `bytes`: a user task, then turns of an assistant tool call
 * and a user tool result (long text, now and then a screenshot inside the result), then a final
 * question. This is the shape of a long agent session.
 */
export function largeAnthropicBody(opts: LargeBodyOptions): LargeBody {
  const r = rng(opts.seed ?? 7);
  const [minChars, maxChars] = opts.toolResultChars ?? [20_000, 60_000];
  const imageEvery = opts.imageEvery ?? 10;
  const side = Math.max(8, Math.round(Math.sqrt((opts.imageBytes ?? 60_000) / 3)));
  const messages: Array<Record<string, unknown>> = [
    { role: 'user', content: `Please fix the failing build. ${text(300, r)}` },
  ];
  let size = 4_000;
  let toolResults = 0;
  let images = 0;
  const tools = ['read_file', 'run_tests', 'grep', 'list_dir', 'screenshot'];
  while (size < opts.bytes && toolResults < (opts.maxToolResults ?? Infinity)) {
    const id = `toolu_${String(toolResults).padStart(6, '0')}`;
    const name = tools[toolResults % tools.length]!;
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: text(120, r) },
        { type: 'tool_use', id, name, input: { path: `src/module-${toolResults}.ts` } },
      ],
    });
    const chars = Math.round(minChars + r() * (maxChars - minChars));
    const content: Array<Record<string, unknown>> = [
      { type: 'text', text: text(Math.min(chars, opts.bytes - size + 100), r) },
    ];
    if (imageEvery > 0 && toolResults % imageEvery === imageEvery - 1) {
      const png = makePng(side, side, toolResults + 1, 1).toString('base64');
      content.push({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } });
      size += png.length;
      images++;
    }
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content }] });
    size += chars + 300;
    toolResults++;
  }
  messages.push({ role: 'assistant', content: [{ type: 'text', text: 'I have what I need.' }] });
  messages.push({ role: 'user', content: 'Now summarise what you changed.' });
  const body = {
    model: opts.model ?? MODELS.anthropic,
    max_tokens: 1024,
    system: [
      {
        type: 'text',
        text: `You are a coding agent. ${text(1500, r)}`,
        cache_control: { type: 'ephemeral' },
      },
    ],
    tools: tools.map((n) => ({
      name: n,
      description: `The ${n} tool.`,
      input_schema: { type: 'object', properties: { path: { type: 'string' } } },
    })),
    messages,
  };
  return { body, json: JSON.stringify(body), toolResults, images, messages: messages.length };
}

/** The long chat's fixed model answer (~1 KB): the fake answers it, the client sends it back. */
export const LONG_CHAT_ANSWER = text(1000, rng(99));

/**
 * A long Anthropic chat: `body(turn)` (1-based) holds every earlier user message (~1 KB, like a
 * pasted snippet) with the model's answer after it, then this turn's user message.
 */
export function longChat(turns: number, seed = 3): { body(turn: number): Record<string, unknown> } {
  const r = rng(seed);
  const users = Array.from({ length: turns }, (_, i) => `Turn ${i + 1}. ${text(1000, r)}`);
  return {
    body(turn) {
      const messages: Array<Record<string, unknown>> = [];
      for (let t = 1; t <= turn; t++) {
        messages.push({ role: 'user', content: users[t - 1]! });
        if (t < turn) messages.push({ role: 'assistant', content: LONG_CHAT_ANSWER });
      }
      return { model: MODELS.anthropic, max_tokens: 512, system: 'You are a helpful assistant.', messages };
    },
  };
}
