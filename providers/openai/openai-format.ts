import type { FormatAdapter } from '../provider.ts';
import { conversationMessageCount, messagesList, positiveInt } from '../wire-messages.ts';
import { parseMessagesBody } from '../parse-body.ts';
import { openaiErrorBody, openaiInBandError } from './openai-error.ts';
import { classifyOpenaiRefusal } from './openai-refusal-classifier.ts';
import { createOpenaiRequestView } from './request-view.ts';
import { normalizeOpenaiRequest, normalizeOpenaiResponse } from './normalize.ts';
import { createOpenaiStreamAccumulator } from './openai-stream-accumulator.ts';
import { isUsageOnlyChunk } from './stream-usage.ts';

/**
 * The OpenAI Chat Completions wire format (also OpenAI-compatible servers).
 * @see https://platform.openai.com/docs/api-reference/chat
 */
export const openaiFormat: FormatAdapter = {
  format: 'openai',
  prunesByDefault: false,
  credentialHeaders: ['authorization'],
  createView: createOpenaiRequestView,
  normalizeRequest: normalizeOpenaiRequest,
  normalizeResponse: normalizeOpenaiResponse,
  createStreamAccumulator: createOpenaiStreamAccumulator,
  isUsageOnlyEvent: isUsageOnlyChunk,
  answerFailure: openaiInBandError,
  classifyRefusal: classifyOpenaiRefusal,
  errorBody: openaiErrorBody,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  // The base URL ends in /v1 (as the SDK's does); the gateway's routes start with /v1.
  apiPath: (routePath) => routePath.replace(/^\/v1(?=\/)/, ''),
  parseBody: parseMessagesBody,
  ...messagesList,
  requestTraits: (body) => {
    const format = (body.response_format as { type?: unknown } | undefined)?.type;
    return {
      tools:
        (Array.isArray(body.tools) ? body.tools.length : 0) +
        (Array.isArray(body.functions) ? body.functions.length : 0),
      messages: conversationMessageCount(messagesList.wireMessages(body)),
      structuredOutput: format === 'json_schema' || format === 'json_object',
      maxTokens: positiveInt(body.max_completion_tokens) ?? positiveInt(body.max_tokens),
    };
  },
};
