/**
 * Tells a compacted history from an edited one (SPEC section 10). Agent clients compact a long
 * conversation by asking the model for a summary, then go on with a history that starts from that
 * summary (Claude Code's `/compact`, Codex's compaction). Such a history diverges from the log at
 * its start, like an edit would; it is a compaction when the diverging user message carries the
 * text of the summary the chat logged as the model's last answer. The chat then goes on, with the
 * compaction recorded, instead of branching into a copy of its own history.
 */
import type { ChatLog, LogMessage } from '../chat-log/chat-log.ts';
import type { LoggedMessage } from '../chat-log/read-models/messages.ts';

/** Lines shorter than this say too little to recognise a summary by. */
const MIN_LINE = 40;
/** How many of the summary's lines the new history must carry (all of them when it has fewer). */
const LINES_NEEDED = 3;

function textOf(content: LogMessage['content']): string {
  return content.map((p) => (p.kind === 'text' || p.kind === 'reasoning' ? p.text : '')).join('\n');
}

/** True when `text` carries enough of `summary`'s lines to have been built from it. */
export function carriesSummary(text: string, summary: string): boolean {
  const lines = summary
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length >= MIN_LINE);
  if (lines.length === 0) return false;
  let found = 0;
  for (const line of lines) {
    if (text.includes(line) && ++found >= LINES_NEEDED) return true;
  }
  return found === lines.length;
}

/**
 * When the incoming history diverges from the logged one at `k` and the diverging message is a
 * user message built from the chat's last model answer (the summary), the seq range of the
 * messages the summary replaced; otherwise undefined.
 */
export async function compactionOf(
  chatLog: ChatLog,
  chatId: string,
  logged: readonly LoggedMessage[],
  k: number,
  incoming: LogMessage | undefined,
): Promise<{ fromSeq: number; toSeq: number } | undefined> {
  if (!incoming || incoming.role !== 'user' || k >= logged.length) return undefined;
  const text = textOf(incoming.content);
  if (text.length < MIN_LINE) return undefined;
  for (let i = logged.length - 1; i >= k; i--) {
    if (logged[i]!.role !== 'model') continue;
    const [event] = await chatLog.read(chatId, logged[i]!.seq, 1);
    if (!event || event.type !== 'message') return undefined;
    return carriesSummary(text, textOf(event.content))
      ? { fromSeq: logged[k]!.seq, toSeq: logged[logged.length - 1]!.seq }
      : undefined;
  }
  return undefined;
}
