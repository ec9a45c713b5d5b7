import type { Refusal } from '../provider.ts';
import { classifyByText } from '../refusal-table.ts';
import { refusesField } from '../unknown-field-refusal.ts';
import { PROMPT_CACHE_KEY_FIELD } from '../view-edits.ts';
import { openaiErrorText } from './openai-error.ts';
import { refusesStreamOptions } from './stream-usage.ts';

/**
 * Classifies an OpenAI (or OpenAI-compatible) refusal. A compatible server that validates bodies
 * strictly refuses `prompt_cache_key` as an unknown field, and one without stream options refuses
 * the `stream_options` the gateway asks for a stream's usage with; those refusals are told apart
 * first, from the whole body (FastAPI's `detail` list carries no `error` object to read the
 * message from).
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export function classifyOpenaiRefusal(status: number, bodyText: string, imageCount: number): Refusal {
  if (refusesField(status, bodyText, PROMPT_CACHE_KEY_FIELD)) return { kind: 'cache-key-refused' };
  if (refusesStreamOptions(status, bodyText)) return { kind: 'stream-options-refused' };
  return classifyByText(status, openaiErrorText(bodyText), { imageCount });
}
