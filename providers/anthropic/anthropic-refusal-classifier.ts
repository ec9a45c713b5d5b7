import type { Refusal } from '../provider.ts';
import type { WirePath } from '../request-view.ts';
import { classifyByText } from '../refusal-table.ts';
import { anthropicErrorText } from './anthropic-error.ts';

/**
 * The image a per-image error names, from its location prefix, e.g.
 * `messages.0.content.1.image.source.base64: ...` or
 * `messages.168.content.0.tool_result.content.1.image.source.base64: ...`.
 */
export function anthropicImagePath(text: string): WirePath | undefined {
  const m = /(messages\.\d+\.content\.\d+(?:\.tool_result\.content\.\d+)?)\.image\b/.exec(text);
  if (!m) return undefined;
  return m[1]!
    .split('.')
    .filter((seg) => seg !== 'tool_result')
    .map((seg) => (/^\d+$/.test(seg) ? Number(seg) : seg));
}

/**
 * Classifies an Anthropic refusal.
 * @see https://docs.anthropic.com/en/api/errors
 */
export function classifyAnthropicRefusal(status: number, bodyText: string, imageCount: number): Refusal {
  return classifyByText(status, anthropicErrorText(bodyText), { imageCount, imagePath: anthropicImagePath });
}
