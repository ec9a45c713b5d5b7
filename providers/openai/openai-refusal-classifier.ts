import type { Refusal } from '../provider.ts';
import { classifyByText } from '../refusal-table.ts';
import { openaiErrorText } from './openai-error.ts';

/**
 * Classifies an OpenAI (or OpenAI-compatible) refusal.
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export function classifyOpenaiRefusal(status: number, bodyText: string, imageCount: number): Refusal {
  return classifyByText(status, openaiErrorText(bodyText), { imageCount });
}
