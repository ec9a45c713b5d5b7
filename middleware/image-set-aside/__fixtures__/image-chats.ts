/**
 * Request bodies with four images each, in both wire formats, for the image set-aside tests:
 * #1 inline in a user message (among text), #2 a remote URL, #3 inside a tool result, #4 inline
 * in the last user message. Every call builds a fresh body.
 */
export type Body = Record<string, unknown>;

export const bytesA = Buffer.from('first picture bytes');
export const bytesC = Buffer.from('screenshot bytes');
export const bytesD = Buffer.from('last picture bytes');
export const urlB = 'https://img.example/b.jpg';

const b64 = (bytes: Buffer): string => bytes.toString('base64');

export function openaiImageChat(opts: { lastImage?: Buffer } = {}): Body {
  const last = opts.lastImage ?? bytesD;
  return {
    model: 'gpt-4o',
    stream: true,
    messages: [
      { role: 'system', content: 'You look at pictures.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look at these' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${b64(bytesA)}`, detail: 'high' } },
          { type: 'text', text: 'and tell me' },
        ],
      },
      { role: 'assistant', content: 'A cat.' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: urlB } }, { type: 'text', text: 'second' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'screenshot', arguments: '{}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'call_1',
        content: [
          { type: 'text', text: 'screen:' },
          { type: 'image_url', image_url: { url: `data:image/webp;base64,${b64(bytesC)}` } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${b64(last)}` } },
          { type: 'text', text: 'now?' },
        ],
      },
    ],
  };
}

export function anthropicImageChat(opts: { lastImage?: Buffer } = {}): Body {
  const last = opts.lastImage ?? bytesD;
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 1024,
    system: [{ type: 'text', text: 'You look at pictures.', cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look at these' },
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: b64(bytesA) },
            cache_control: { type: 'ephemeral', ttl: '1h' },
          },
          { type: 'text', text: 'and tell me' },
        ],
      },
      { role: 'assistant', content: 'A cat.' },
      { role: 'user', content: [{ type: 'image', source: { type: 'url', url: urlB } }, { type: 'text', text: 'second' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [
              { type: 'text', text: 'screen:' },
              { type: 'image', source: { type: 'base64', media_type: 'image/webp', data: b64(bytesC) } },
            ],
          },
          { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: b64(last) } },
          { type: 'text', text: 'now?', cache_control: { type: 'ephemeral' } },
        ],
      },
    ],
  };
}

/** Paths of images #1..#4 in each format. */
export const imagePaths = {
  openai: [
    ['messages', 1, 'content', 1],
    ['messages', 3, 'content', 0],
    ['messages', 5, 'content', 1],
    ['messages', 6, 'content', 0],
  ],
  anthropic: [
    ['messages', 0, 'content', 1],
    ['messages', 2, 'content', 0],
    ['messages', 4, 'content', 0, 'content', 1],
    ['messages', 4, 'content', 1],
  ],
} as const;

/** Reads the value at `path` in `body`. */
export function at(body: unknown, path: ReadonlyArray<string | number>): unknown {
  let here: unknown = body;
  for (const step of path) {
    if (typeof here !== 'object' || here === null) return undefined;
    here = (here as Record<string | number, unknown>)[step];
  }
  return here;
}
