import type { FormatAdapter } from '../provider.ts';
import { parseInputBody } from '../parse-body.ts';
import { positiveInt } from '../wire-messages.ts';
import { isObj } from '../wire-json.ts';
import { normalizeResponsesRequest, normalizeResponsesResponse, responsesInputItems } from './normalize.ts';
import { createResponsesRequestView } from './request-view.ts';
import { responsesErrorBody, responsesInBandError } from './responses-error.ts';
import { itemSide } from './responses-items.ts';
import { classifyResponsesRefusal } from './responses-refusal-classifier.ts';
import { createResponsesStreamAccumulator } from './responses-stream-accumulator.ts';
import { peekResponsesStreamStart } from './responses-stream-start.ts';

/**
 * The OpenAI Responses wire format, served by providers of format `openai` (the same provider
 * serves /v1/chat/completions and /v1/responses).
 * @see https://platform.openai.com/docs/api-reference/responses
 */
export const responsesFormat: FormatAdapter = {
  format: 'responses',
  prunesByDefault: false,
  storesResponses: true,
  credentialHeaders: ['authorization'],
  createView: createResponsesRequestView,
  normalizeRequest: normalizeResponsesRequest,
  normalizeResponse: normalizeResponsesResponse,
  createStreamAccumulator: createResponsesStreamAccumulator,
  answerFailure: responsesInBandError,
  classifyRefusal: classifyResponsesRefusal,
  errorBody: responsesErrorBody,
  authHeaders: (apiKey) => ({ authorization: `Bearer ${apiKey}` }),
  // The base URL ends in /v1 (as the SDK's does): /v1/responses is <baseUrl>/responses.
  apiPath: (routePath) => routePath.replace(/^\/v1(?=\/)/, ''),
  parseBody: parseInputBody,
  peekStreamStart: peekResponsesStreamStart,
  // A string input is one user message.
  wireMessages: responsesInputItems,
  withWireMessages: (body, messages) => ({ ...body, input: messages }),
  requestTraits: (body) => {
    const text = isObj(body.text) ? body.text : {};
    const format = isObj(text.format) ? text.format.type : undefined;
    const items = responsesInputItems(body);
    return {
      tools: Array.isArray(body.tools) ? body.tools.length : 0,
      messages: items.filter((item) => !isObj(item) || itemSide(item) !== 'system').length,
      structuredOutput: format === 'json_schema' || format === 'json_object',
      maxTokens: positiveInt(body.max_output_tokens),
    };
  },
};
