import type { FormatAdapter } from '../provider.ts';
import { conversationMessageCount, messagesList, positiveInt } from '../wire-messages.ts';
import { parseMessagesBody } from '../parse-body.ts';
import { anthropicErrorBody, anthropicInBandError } from './anthropic-error.ts';
import { classifyAnthropicRefusal } from './anthropic-refusal-classifier.ts';
import { createAnthropicRequestView } from './request-view.ts';
import { normalizeAnthropicRequest } from './normalize.ts';
import { createAnthropicStreamAccumulator, normalizeAnthropicResponse } from './normalize-answer.ts';

/**
 * The Anthropic Messages wire format.
 * @see https://docs.anthropic.com/en/api/messages
 */
export const anthropicFormat: FormatAdapter = {
  format: 'anthropic',
  // Prompt caching is explicit here, so pruning defaults to cache-ttl (SPEC section 4).
  prunesByDefault: true,
  credentialHeaders: ['x-api-key', 'authorization'],
  createView: createAnthropicRequestView,
  normalizeRequest: normalizeAnthropicRequest,
  normalizeResponse: normalizeAnthropicResponse,
  createStreamAccumulator: createAnthropicStreamAccumulator,
  answerFailure: anthropicInBandError,
  classifyRefusal: classifyAnthropicRefusal,
  errorBody: anthropicErrorBody,
  authHeaders: (apiKey) => ({ 'x-api-key': apiKey }),
  // The base URL has no /v1 (as the SDK's); the route's path is appended whole.
  apiPath: (routePath) => routePath,
  parseBody: parseMessagesBody,
  ...messagesList,
  requestTraits: (body) => {
    const outputConfig = body.output_config as { format?: unknown } | undefined;
    return {
      tools: Array.isArray(body.tools) ? body.tools.length : 0,
      messages: conversationMessageCount(messagesList.wireMessages(body)),
      // Structured output: `output_config.format` (and the older beta's `output_format`).
      structuredOutput: Boolean(outputConfig?.format ?? body.output_format),
      maxTokens: positiveInt(body.max_tokens),
    };
  },
};
