/**
 * Builds the same chat in both wire formats from a short description, and says where each turn
 * starts, so the image replay clean-up tests can name turns instead of message indexes.
 */
export type Body = Record<string, unknown>;
export type Part = { text: string } | { image: number };

export interface Turn {
  /** The user message that opens the turn. */
  user: Part[];
  /** Each step is an assistant tool call answered by a tool result with these parts. */
  loops?: Part[][];
  /** A final assistant answer. */
  reply?: boolean;
}

export interface BuiltChat {
  body: Body;
  /** Index in `messages` where each turn starts. */
  turnStarts: number[];
}

const pixels = (n: number): string => Buffer.from(`image bytes ${n}`).toString('base64');

function openaiParts(parts: Part[]): unknown {
  const only = parts[0];
  if (parts.length === 1 && only && 'text' in only) return only.text;
  return parts.map((p) =>
    'text' in p ? { type: 'text', text: p.text } : { type: 'image_url', image_url: { url: `data:image/png;base64,${pixels(p.image)}` } },
  );
}

function anthropicParts(parts: Part[]): unknown {
  const only = parts[0];
  if (parts.length === 1 && only && 'text' in only) return only.text;
  return parts.map((p) =>
    'text' in p
      ? { type: 'text', text: p.text }
      : { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pixels(p.image) } },
  );
}

export function openaiChat(turns: Turn[], opts: { system?: boolean } = {}): BuiltChat {
  const messages: unknown[] = opts.system ? [{ role: 'system', content: 'Be brief. [Image: source: /sys.png]' }] : [];
  const turnStarts: number[] = [];
  let call = 0;
  turns.forEach((turn, t) => {
    turnStarts.push(messages.length);
    messages.push({ role: 'user', content: openaiParts(turn.user) });
    for (const result of turn.loops ?? []) {
      const id = `call_${call++}`;
      messages.push({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'look', arguments: '{"at":"media://inbound/a.png"}' } }] });
      messages.push({ role: 'tool', tool_call_id: id, content: openaiParts(result) });
    }
    if (turn.reply) messages.push({ role: 'assistant', content: `answer ${t} about [media attached: /m/${t}.png]` });
  });
  return { body: { model: 'gpt-4o', messages }, turnStarts };
}

export function anthropicChat(turns: Turn[], opts: { system?: boolean } = {}): BuiltChat {
  const messages: unknown[] = [];
  const turnStarts: number[] = [];
  let call = 0;
  turns.forEach((turn, t) => {
    turnStarts.push(messages.length);
    messages.push({ role: 'user', content: anthropicParts(turn.user) });
    for (const result of turn.loops ?? []) {
      const id = `toolu_${call++}`;
      messages.push({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'look', input: { at: 'media://inbound/a.png' } }] });
      messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: anthropicParts(result) }] });
    }
    if (turn.reply) messages.push({ role: 'assistant', content: [{ type: 'text', text: `answer ${t} about [media attached: /m/${t}.png]` }] });
  });
  const body: Body = { model: 'claude-sonnet-4-5', max_tokens: 512, messages };
  if (opts.system) body.system = [{ type: 'text', text: 'Be brief. [Image: source: /sys.png]', cache_control: { type: 'ephemeral' } }];
  return { body, turnStarts };
}
