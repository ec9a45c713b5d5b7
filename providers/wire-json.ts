/** Small readers shared by the wire-format accessors and normalizers. */

export type Obj = Record<string, unknown>;

/** The bytes of JSON's structure, for the readers that work on a body's bytes as sent. */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;

/** True for a byte of JSON's whitespace (space, line feed, carriage return, tab). */
export function isJsonSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** The first index from `at` (before `end`) that is not JSON whitespace. */
export function skipJsonSpace(bytes: Uint8Array, at: number, end = bytes.length): number {
  while (at < end && isJsonSpace(bytes[at]!)) at++;
  return at;
}

/** Index of the quote that closes the string opened at `open` (the end of the text when none). */
export function endOfString(bytes: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at === -1) return bytes.length;
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}

/** True for a plain JSON object (not an array, not null). */
export function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value when it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** A token count as providers write it (a non-negative safe integer), else undefined. */
function tokenCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * Maps an OpenAI-style `usage` object (Chat Completions: `prompt_tokens`, `completion_tokens`,
 * `prompt_tokens_details`; Responses: `input_tokens`, `output_tokens`, `input_tokens_details`),
 * whose input count includes the cached tokens, to the log's usage. A compatible server that
 * counts its cache in fields of its own (DeepSeek's `prompt_cache_hit_tokens`, part of its
 * `prompt_tokens` as OpenAI's `cached_tokens` are) has them read when `cached_tokens` is absent.
 * https://api-docs.deepseek.com/guides/kv_cache
 */
export function openaiStyleUsage(
  usage: unknown,
  names: { input: string; output: string; details: string },
): { inputTokens?: number; outputTokens?: number; cacheReadTokens?: number } | undefined {
  if (!isObj(usage)) return undefined;
  const inputTokens = tokenCount(usage[names.input]);
  const outputTokens = tokenCount(usage[names.output]);
  const details = usage[names.details];
  const cacheReadTokens =
    (isObj(details) ? tokenCount(details.cached_tokens) : undefined) ??
    tokenCount(usage.prompt_cache_hit_tokens);
  return {
    ...(inputTokens !== undefined && { inputTokens }),
    ...(outputTokens !== undefined && { outputTokens }),
    ...(cacheReadTokens !== undefined && { cacheReadTokens }),
  };
}
