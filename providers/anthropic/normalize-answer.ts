/**
 * Anthropic Messages answers in the chat log's normalized form: a non-streamed `message`, and the
 * events of a streamed one folded into the same (`normalize.ts` has the requests, and the blocks
 * both share). Nothing is thrown on.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */
import type { Usage } from '../../chat-log/format/current.ts';
import type { NormalizedResponse, StreamAccumulator } from '../provider.ts';
import { TextBuilder } from '../../lib/text-builder.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import { modelPart, modelParts } from './normalize.ts';

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** Maps a `usage` object; later fields (message_delta) override earlier ones (message_start). */
function anthropicUsage(usage: Obj, into: Usage = {}): Usage {
  const fields: Array<[keyof Usage, unknown]> = [
    ['inputTokens', usage.input_tokens],
    ['outputTokens', usage.output_tokens],
    ['cacheReadTokens', usage.cache_read_input_tokens],
    ['cacheWriteTokens', usage.cache_creation_input_tokens],
    // Of those, the one-hour writes (`cache_creation` splits the writes by TTL).
    [
      'cacheWrite1hTokens',
      isObj(usage.cache_creation) ? usage.cache_creation.ephemeral_1h_input_tokens : undefined,
    ],
  ];
  const out: Usage = { ...into };
  for (const [key, value] of fields) {
    const n = count(value);
    if (n !== undefined) out[key] = n;
  }
  return out;
}

/** Normalizes a non-streamed `message` object. */
export function normalizeAnthropicResponse(json: unknown): NormalizedResponse {
  const body = isObj(json) ? json : {};
  const responseId = str(body.id);
  return {
    message: { role: 'model', content: modelParts(body.content) },
    usage: isObj(body.usage) ? anthropicUsage(body.usage) : undefined,
    stopReason: str(body.stop_reason),
    model: str(body.model),
    ...(responseId !== undefined && { responseId }),
  };
}

/** A content block as its stream events build it. */
interface Block {
  block: Obj;
  texts: Map<string, TextBuilder>;
  json: TextBuilder;
  raw?: string;
}

/** Folds Messages stream events into the response the non-streamed call would give. */
export function createAnthropicStreamAccumulator(): StreamAccumulator {
  /**
   * Blocks by index; `texts` collects a block's text, thinking and signature deltas, `json` its
   * input_json_delta text, `raw` keeps that when it never parsed.
   */
  const blocks = new Map<number, Block>();
  let dropped = false;
  let held = 0;
  let usage: Usage | undefined;
  let stopReason: string | undefined;
  let model: string | undefined;
  let responseId: string | undefined;
  let stopped = false;
  let failure: string | undefined;
  let failureType: string | undefined;

  function finish(entry: Block): void {
    for (const [key, text] of entry.texts) entry.block[key] = (str(entry.block[key]) ?? '') + text.toString();
    entry.texts.clear();
    if (entry.json.length === 0) return;
    const json = entry.json.toString();
    entry.json = new TextBuilder();
    try {
      entry.block.input = JSON.parse(json);
    } catch {
      // Incomplete JSON (a cut stream): keep the text as sent rather than lose it.
      entry.raw = json;
    }
  }

  /** Appends a delta to the block's `key` (text, thinking, signature). */
  function appendTo(entry: Block, key: string, piece: unknown): void {
    const text = str(piece) ?? '';
    let builder = entry.texts.get(key);
    if (!builder) entry.texts.set(key, (builder = new TextBuilder()));
    builder.append(text);
    held += text.length;
  }

  return {
    push(event, data) {
      let payload: unknown;
      try {
        payload = JSON.parse(data);
      } catch {
        return;
      }
      if (!isObj(payload)) return;
      const type = str(payload.type) ?? event;
      const index = typeof payload.index === 'number' ? payload.index : -1;
      switch (type) {
        case 'message_start':
          if (isObj(payload.message)) {
            model = str(payload.message.model) ?? model;
            responseId = str(payload.message.id) ?? responseId;
            if (isObj(payload.message.usage)) usage = anthropicUsage(payload.message.usage, usage);
          }
          break;
        case 'content_block_start':
          if (isObj(payload.content_block) && !dropped) {
            blocks.set(index, {
              block: { ...payload.content_block },
              texts: new Map(),
              json: new TextBuilder(),
            });
            held += data.length;
          }
          break;
        case 'content_block_delta': {
          const entry = blocks.get(index);
          const delta = payload.delta;
          if (!entry || !isObj(delta)) break;
          if (delta.type === 'text_delta') appendTo(entry, 'text', delta.text);
          else if (delta.type === 'thinking_delta') appendTo(entry, 'thinking', delta.thinking);
          else if (delta.type === 'signature_delta') appendTo(entry, 'signature', delta.signature);
          else if (delta.type === 'input_json_delta') {
            const json = str(delta.partial_json) ?? '';
            entry.json.append(json);
            held += json.length;
          }
          break;
        }
        case 'content_block_stop': {
          const entry = blocks.get(index);
          if (entry) finish(entry);
          break;
        }
        case 'message_delta':
          if (isObj(payload.delta)) stopReason = str(payload.delta.stop_reason) ?? stopReason;
          if (isObj(payload.usage)) usage = anthropicUsage(payload.usage, usage);
          break;
        case 'error':
          // An error after the 200 (overloaded mid-stream): the answer ends here.
          stopReason ??= 'error';
          if (failure === undefined) {
            const error = isObj(payload.error) ? payload.error : undefined;
            failure = str(error?.message) ?? 'error';
            failureType = str(error?.type);
          }
          break;
        case 'message_stop':
          stopped = true;
          break;
        default:
          // ping and event types added later carry nothing to keep.
          break;
      }
    },

    ended() {
      return stopped;
    },

    failure() {
      return failure;
    },

    failureType() {
      return failureType;
    },

    held() {
      return held;
    },

    dropContent() {
      dropped = true;
      blocks.clear();
      held = 0;
    },

    result() {
      const entries = [...blocks.entries()].sort(([a], [b]) => a - b).map(([, entry]) => entry);
      for (const entry of entries) finish(entry);
      const content = entries.map((entry) => {
        const part = modelPart(entry.block);
        if (part.kind === 'tool-call' && entry.raw !== undefined) part.args = entry.raw;
        return part;
      });
      return {
        message: { role: 'model', content },
        usage,
        stopReason,
        model,
        ...(responseId !== undefined && { responseId }),
      };
    },
  };
}
