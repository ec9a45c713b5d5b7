/** Small readers shared by the wire-format accessors and normalizers. */

export type Obj = Record<string, unknown>;

/** True for a byte of JSON's whitespace (space, line feed, carriage return, tab). */
export function isJsonSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

/** Index of the quote that closes the string opened at `open` (the end of the text when none). */
export function endOfString(bytes: Uint8Array, open: number): number {
  let at = open;
  for (;;) {
    at = bytes.indexOf(0x22, at + 1);
    if (at === -1) return bytes.length;
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === 0x5c) backslashes++;
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
