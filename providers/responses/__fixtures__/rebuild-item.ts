/**
 * Test helper: rebuilds a Responses item from the log message the normalizer made of it, by the
 * rules normalize-item.ts documents (parts plus `wire`). Equal to the original item means the log
 * kept the item losslessly, a file's content included.
 */
import type { NormalizedMessage, PendingContentPart } from '../../../chat-log/pending-message.ts';

type Obj = Record<string, unknown>;
type Part = PendingContentPart | Extract<PendingContentPart, { kind: 'tool-result' }>['content'][number];

const ROLES: Record<string, string> = { user: 'user', model: 'assistant', system: 'system', developer: 'developer' };

function rebuildPart(part: Part, rest: unknown): unknown {
  const fields = (rest ?? {}) as Obj;
  switch (part.kind) {
    case 'raw':
      return part.value;
    case 'text':
      return { ...fields, [fields.type === 'refusal' ? 'refusal' : 'text']: part.text };
    case 'image':
      return {
        ...fields,
        image_url:
          part.source.kind === 'base64' ? `data:${part.source.mediaType};base64,${part.source.data}` : part.source.url,
      };
    case 'file':
      return {
        ...fields,
        ...(part.name !== undefined && { filename: part.name }),
        ...(part.url !== undefined && { [/^data:/i.test(part.url) ? 'file_data' : 'file_url']: part.url }),
      };
    default:
      throw new Error(`no item part of kind ${part.kind}`);
  }
}

/** A content/output value from its parts and what `wire` kept of it. */
function rebuildValue(parts: readonly Part[], kept: unknown, hasKept: boolean): unknown {
  if (Array.isArray(kept)) return parts.map((part, i) => rebuildPart(part, kept[i]));
  if (hasKept && kept !== null && typeof kept === 'object') return rebuildPart(parts[0]!, kept);
  if (hasKept) return kept;
  if (parts.length === 1 && parts[0]!.kind === 'text') return parts[0]!.text;
  if (parts.length === 1 && parts[0]!.kind === 'raw') return parts[0]!.value;
  return undefined;
}

export function rebuildItem(message: NormalizedMessage): unknown {
  const wire: Obj = { ...(message.wire ?? {}) };
  const [first] = message.content;
  if (first?.kind === 'raw' && message.content.length === 1 && message.role !== 'tool' && !('content' in wire)) {
    return { ...wire, ...(first.value as Obj) };
  }
  if (first?.kind === 'tool-call') {
    const argsKey = wire.type === 'custom_tool_call' ? 'input' : 'arguments';
    return { ...wire, call_id: first.id, name: first.name, [argsKey]: first.args };
  }
  if (first?.kind === 'tool-result') {
    const { output, ...envelope } = wire;
    const value = rebuildValue(first.content, output, 'output' in wire);
    return {
      ...envelope,
      ...(wire.type !== 'local_shell_call_output' && { call_id: first.callId }),
      ...(value !== undefined && { output: value }),
    };
  }
  if (message.content.every((p) => p.kind === 'reasoning') && Array.isArray(wire.summary)) {
    const summary = wire.summary as unknown[];
    return {
      ...wire,
      summary: message.content.map((p, i) => ({ ...(summary[i] as Obj), text: (p as { text: string }).text })),
    };
  }
  const { content, ...envelope } = wire;
  const role = ROLES[message.role];
  return {
    ...envelope,
    ...(role !== undefined && { role }),
    content: rebuildValue(message.content, content, 'content' in wire),
  };
}
