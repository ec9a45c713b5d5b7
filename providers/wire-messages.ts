/** The `messages` list shared by the Chat Completions and Messages wire formats. */
import type { FormatAdapter } from './provider.ts';

export const messagesList: Pick<FormatAdapter, 'wireMessages' | 'withWireMessages'> = {
  wireMessages: (body) => (Array.isArray(body.messages) ? (body.messages as unknown[]) : []),
  withWireMessages: (body, messages) => ({ ...body, messages }),
};

/** Conversation messages of a `messages` list, system and developer messages not counted. */
export function conversationMessageCount(messages: readonly unknown[]): number {
  let n = 0;
  for (const m of messages) {
    const role = (m as { role?: unknown } | null)?.role;
    if (role !== 'system' && role !== 'developer') n++;
  }
  return n;
}

/** A positive whole number, or undefined. */
export function positiveInt(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}
