/**
 * Classifies a Responses API refusal from status and body, in any of its shapes (HTTP error body,
 * `error` event, `response.failed` event; see responses-error.ts), with the shared table of
 * recorded messages. The API names the input part it refuses in `param`
 * (`input[3].content[1].image_url`), so a per-image error sets aside that image. A refusal of
 * `prompt_cache_key` as an unknown field (servers that validate bodies strictly) is its own kind.
 * @see https://platform.openai.com/docs/guides/error-codes
 */
import type { Refusal } from '../provider.ts';
import type { WirePath } from '../request-view.ts';
import { classifyByText } from '../refusal-table.ts';
import { refusesField } from '../unknown-field-refusal.ts';
import { PROMPT_CACHE_KEY_FIELD } from '../view-edits.ts';
import { responsesErrorFields } from './responses-error.ts';

/**
 * The input part an error names, from `param` or from the message text: `input[3].content[1]...`
 * (a message part), `input[5].output[0]...` (a tool output part), `input[7].output...` (a
 * computer screenshot).
 */
export function responsesImagePath(text: string | undefined): WirePath | undefined {
  if (!text) return undefined;
  const part = /\binput\[(\d+)\]\.(content|output)\[(\d+)\]/.exec(text);
  if (part) return ['input', Number(part[1]), part[2]!, Number(part[3])];
  const screenshot = /\binput\[(\d+)\]\.output\b/.exec(text);
  return screenshot ? ['input', Number(screenshot[1]), 'output'] : undefined;
}

/**
 * Codes for one image the model cannot use (unreadable, wrong format, not downloadable). When the
 * error names that image, setting it aside repairs the request like a per-image size error does.
 */
export const UNUSABLE_IMAGE_CODES: ReadonlySet<string> = new Set([
  'invalid_image',
  'invalid_image_format',
  'invalid_base64_image',
  'invalid_image_url',
  'invalid_image_mode',
  'image_parse_error',
  'image_too_small',
  'empty_image_file',
  'unsupported_image_media_type',
  'failed_to_download_image',
  'image_file_not_found',
]);

/** Classifies a refusal of the Responses API; `imageCount` = images the request carried. */
export function classifyResponsesRefusal(status: number, bodyText: string, imageCount: number): Refusal {
  // A server that validates bodies strictly refuses `prompt_cache_key` as an unknown field.
  if (refusesField(status, bodyText, PROMPT_CACHE_KEY_FIELD)) return { kind: 'cache-key-refused' };
  const fields = responsesErrorFields(bodyText);
  const text = fields ? [fields.code, fields.type, fields.message].filter(Boolean).join(' ') : bodyText;
  const imagePath = (message: string) => responsesImagePath(fields?.param) ?? responsesImagePath(message);
  if (imageCount > 0 && fields?.code !== undefined && UNUSABLE_IMAGE_CODES.has(fields.code)) {
    const named = imagePath(text);
    if (named) return { kind: 'image-limit', imagePath: named };
  }
  return classifyByText(status, text, { imageCount, imagePath });
}
