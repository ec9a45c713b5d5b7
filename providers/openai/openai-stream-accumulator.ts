/**
 * Folds a streamed Chat Completions answer (`chat.completion.chunk` events, then `[DONE]`) into the
 * response the non-streamed call would give, and tells whether the provider said inside the
 * stream that the answer failed (an error chunk, which vLLM and OpenRouter follow with `[DONE]`).
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
import type { StreamAccumulator } from '../provider.ts';
import { TextBuilder } from '../../lib/text-builder.ts';
import { isObj, str, type Obj } from '../wire-json.ts';
import { openaiInBandError, openaiInBandErrorType } from './openai-error.ts';
import { normalizeOpenaiResponse } from './normalize.ts';

interface ToolCallDraft {
  id: string;
  name: string;
  args: TextBuilder;
}

/** Folds `chat.completion.chunk` events into the response the non-streamed call would give. */
export function createOpenaiStreamAccumulator(): StreamAccumulator {
  let content = new TextBuilder();
  let reasoning = new TextBuilder();
  let refusal = new TextBuilder();
  let dropped = false;
  let held = 0;
  const calls = new Map<number, ToolCallDraft>();
  // The call the last tool-call delta went to, and the index a call without one would take next.
  let lastIndex: number | undefined;
  let nextIndex = 0;
  let usage: unknown;
  let stopReason: string | undefined;
  let model: string | undefined;
  let responseId: string | undefined;
  let sawDone = false;
  let failure: string | undefined;
  let failureType: string | undefined;

  /**
   * The call a tool-call delta belongs to. Without `index` (some compatible servers omit it), a
   * delta naming a new id starts a call (Ollama and Gemini send each call whole, with its id);
   * one without a new id continues the last call (its argument fragments).
   */
  function toolCallIndex(call: Obj): number {
    if (typeof call.index === 'number') return call.index;
    if (lastIndex === undefined) return nextIndex;
    const id = str(call.id);
    const lastId = calls.get(lastIndex)?.id;
    return id && lastId && id !== lastId ? nextIndex : lastIndex;
  }

  return {
    push(_event, data) {
      const text = data.trim();
      if (text === '[DONE]') sawDone = true;
      if (text === '' || text === '[DONE]') return;
      let chunk: unknown;
      try {
        chunk = JSON.parse(text);
      } catch {
        return;
      }
      if (!isObj(chunk)) return;
      const error = openaiInBandError(chunk);
      if (error !== undefined) {
        // An error after the 200 (OpenRouter, vLLM): the answer ends here and failed, whatever
        // follows (vLLM and OpenRouter still close with `[DONE]`).
        stopReason ??= 'error';
        if (failure === undefined) {
          failure = error;
          failureType = openaiInBandErrorType(chunk);
        }
        return;
      }
      model = str(chunk.model) ?? model;
      responseId = str(chunk.id) ?? responseId;
      if (isObj(chunk.usage)) usage = chunk.usage;
      if (!Array.isArray(chunk.choices)) return;
      for (const choice of chunk.choices) {
        if (!isObj(choice) || (choice.index !== undefined && choice.index !== 0)) continue;
        stopReason = str(choice.finish_reason) ?? stopReason;
        if (dropped) continue;
        const delta = isObj(choice.delta) ? choice.delta : {};
        const before = content.length + reasoning.length + refusal.length;
        content.append(str(delta.content) ?? '');
        reasoning.append(str(delta.reasoning_content) ?? str(delta.reasoning) ?? '');
        refusal.append(str(delta.refusal) ?? '');
        held += content.length + reasoning.length + refusal.length - before;
        if (!Array.isArray(delta.tool_calls)) continue;
        for (const call of delta.tool_calls) {
          if (!isObj(call)) continue;
          const index = toolCallIndex(call);
          lastIndex = index;
          nextIndex = Math.max(nextIndex, index + 1);
          const draft = calls.get(index) ?? { id: '', name: '', args: new TextBuilder() };
          draft.id = str(call.id) ?? draft.id;
          if (isObj(call.function)) {
            // As the SDK does: a name replaces, arguments accumulate.
            draft.name = str(call.function.name) || draft.name;
            const args = str(call.function.arguments) ?? '';
            draft.args.append(args);
            held += args.length;
          }
          calls.set(index, draft);
        }
      }
    },

    ended() {
      // An in-stream error ends the stream, but not the answer: `failure()` says it failed.
      return sawDone || (stopReason !== undefined && stopReason !== 'error');
    },

    failure() {
      return failure;
    },

    held() {
      return held;
    },

    dropContent() {
      dropped = true;
      content = new TextBuilder();
      reasoning = new TextBuilder();
      refusal = new TextBuilder();
      calls.clear();
      held = 0;
    },

    failureType() {
      return failureType;
    },

    result() {
      const reasoningText = reasoning.toString();
      const refusalText = refusal.toString();
      const message: Obj = {
        content: content.toString(),
        ...(reasoningText && { reasoning_content: reasoningText }),
        ...(refusalText && { refusal: refusalText }),
        tool_calls: [...calls.entries()]
          .sort(([a], [b]) => a - b)
          .map(([, call]) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: call.args.toString() },
          })),
      };
      // The completion the non-streamed call would have answered, normalized the same way.
      return normalizeOpenaiResponse({
        id: responseId,
        model,
        usage,
        choices: [{ index: 0, message, finish_reason: stopReason }],
      });
    },
  };
}
