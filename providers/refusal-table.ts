/**
 * Refusal classification shared by the formats: a table of patterns matched against the error
 * message text, each row backed by a recorded real provider message (see the classifier tests).
 */
import type { Refusal } from './provider.ts';
import type { WirePath } from './request-view.ts';

export interface RefusalRow {
  kind: 'context-overflow' | 'image-limit';
  pattern: RegExp;
  /** Where the recorded message comes from (provider, API), for the test table. */
  seenFrom: string;
}

/** Context-overflow messages (SPEC section 3 plus provider-errors.md). */
export const CONTEXT_OVERFLOW_ROWS: RefusalRow[] = [
  { kind: 'context-overflow', pattern: /context_length_exceeded/i, seenFrom: 'OpenAI code' },
  { kind: 'context-overflow', pattern: /maximum context length is/i, seenFrom: 'OpenAI, vLLM, OpenRouter' },
  { kind: 'context-overflow', pattern: /prompt is too long/i, seenFrom: 'Anthropic' },
  { kind: 'context-overflow', pattern: /exceed context limit/i, seenFrom: 'Anthropic (input + max_tokens)' },
  { kind: 'context-overflow', pattern: /exceeds the available context size/i, seenFrom: 'llama.cpp server' },
  { kind: 'context-overflow', pattern: /exceed_context_size_error/i, seenFrom: 'llama.cpp server type' },
  { kind: 'context-overflow', pattern: /exceeds the maximum number of tokens allowed/i, seenFrom: 'Gemini' },
  {
    kind: 'context-overflow',
    pattern: /request size exceeds model context window/i,
    seenFrom: 'Anthropic 413',
  },
  {
    kind: 'context-overflow',
    pattern: /input exceeds the context window/i,
    seenFrom: 'OpenAI Responses API',
  },
  { kind: 'context-overflow', pattern: /longer than the context length/i, seenFrom: 'Ollama' },
];

/** Image-limit messages. */
export const IMAGE_LIMIT_ROWS: RefusalRow[] = [
  { kind: 'image-limit', pattern: /too many images/i, seenFrom: 'Anthropic, gateways' },
  { kind: 'image-limit', pattern: /too much media/i, seenFrom: 'Anthropic' },
  { kind: 'image-limit', pattern: /at most \d+ image\(s\) may be provided/i, seenFrom: 'vLLM' },
  { kind: 'image-limit', pattern: /image exceeds \d+ ?MB maximum/i, seenFrom: 'Anthropic per-image size' },
  {
    kind: 'image-limit',
    pattern: /exceed max allowed size for many-image requests/i,
    seenFrom: 'Anthropic dimensions',
  },
  {
    kind: 'image-limit',
    pattern: /image dimensions exceed max allowed size/i,
    seenFrom: 'Anthropic dimensions',
  },
  { kind: 'image-limit', pattern: /images?, exceeding the maximum of \d+/i, seenFrom: 'hosted gateways' },
  { kind: 'image-limit', pattern: /image count \d+ exceeds limit \d+/i, seenFrom: 'hosted gateways' },
  {
    kind: 'image-limit',
    pattern: /exceeded limit on max data-uri per request/i,
    seenFrom: 'hosted gateways',
  },
  {
    kind: 'image-limit',
    pattern: /only supports one image while more than one image/i,
    seenFrom: 'Ollama mllama',
  },
  {
    kind: 'image-limit',
    pattern: /image_too_large|image_file_too_large/i,
    seenFrom: 'OpenAI Responses codes',
  },
];

const COUNT_PATTERNS: RegExp[] = [
  // "too many images and documents: 104 + 1 > 100" (documents count toward the cap)
  /(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)/,
  // "Too many images in request: 54 > 30", "102 images > 100"
  /(\d+)(?:\s*images?)?\s*>\s*(\d+)/i,
  // "request contains 52 images, exceeding the maximum of 50"
  /contains (\d+) images?, exceeding the maximum of (\d+)/i,
  // "Image count 6 exceeds limit 4"
  /image count (\d+) exceeds limit (\d+)/i,
  // "Too many images in request: 11 images provided, but the model supports a maximum of 10 images."
  /(\d+) images? (?:were )?provided, but the model supports a maximum of (\d+)/i,
];

/** Extracts "sent > max" counts from an image-limit message, when it states them. */
export function imageCounts(message: string): { sent: number; max: number } | undefined {
  // Anthropic "Too much media: 0 document pages + 102 images > 100"
  const media = /(\d+)\s*document pages?\s*\+\s*(\d+)\s*images?\s*>\s*(\d+)/i.exec(message);
  if (media) return { sent: Number(media[1]) + Number(media[2]), max: Number(media[3]) };
  if (/bytes\s*>\s*\d+\s*bytes/i.test(message) || /pixels/i.test(message)) return undefined;
  for (const re of COUNT_PATTERNS) {
    const m = re.exec(message);
    if (!m) continue;
    if (m.length === 4) return { sent: Number(m[1]) + Number(m[2]), max: Number(m[3]) };
    return { sent: Number(m[1]), max: Number(m[2]) };
  }
  return undefined;
}

/** The stated maximum of a message that gives no count of what was sent ("At most 1 image(s)"). */
export function imageMax(message: string): number | undefined {
  const atMost = /at most (\d+) image\(s\)/i.exec(message);
  return atMost ? Number(atMost[1]) : undefined;
}

/** Matches a message against the tables; transient statuses are decided by the caller. */
export function matchRefusalText(text: string): 'context-overflow' | 'image-limit' | undefined {
  // Image rows first: an image-size message may also mention "maximum".
  if (IMAGE_LIMIT_ROWS.some((r) => r.pattern.test(text))) return 'image-limit';
  if (CONTEXT_OVERFLOW_ROWS.some((r) => r.pattern.test(text))) return 'context-overflow';
  return undefined;
}

/** Statuses the SDKs retry: 408, 409, 429 and >= 500 (529 included). */
export function isTransientStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** Common part of both formats' classifiers. */
export function classifyByText(
  status: number,
  text: string,
  opts: { imageCount: number; imagePath?: (text: string) => WirePath | undefined },
): Refusal {
  const kind = matchRefusalText(text);
  if (kind === 'context-overflow') return { kind };
  if (kind === 'image-limit') {
    // An image refusal on a request that carries no image cannot be repaired by setting one aside.
    if (opts.imageCount === 0) return isTransientStatus(status) ? { kind: 'transient' } : { kind: 'other' };
    const imagePath = opts.imagePath?.(text);
    if (imagePath) return { kind, imagePath };
    const count = imageCounts(text);
    if (count) return { kind, count };
    const max = imageMax(text);
    if (max !== undefined) return { kind, count: { sent: opts.imageCount, max } };
    return { kind };
  }
  if (status === 413 && opts.imageCount > 0 && /request_too_large|exceeds the maximum size/i.test(text)) {
    return { kind: 'image-limit' };
  }
  if (isTransientStatus(status)) return { kind: 'transient' };
  return { kind: 'other' };
}
