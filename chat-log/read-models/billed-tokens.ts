/**
 * A provider's usage as billed input by kind (SPEC section 11). Providers count differently:
 * Anthropic's `input_tokens` leaves out the tokens read from or written to the cache, OpenAI's
 * `prompt_tokens` (and the Responses API's `input_tokens`) include the cached ones. `input` here is
 * always the base input billed at the full price, the same for every format. `cacheWrite` is every
 * cache write and `cacheWrite1h` the part of it written to a one-hour cache (Anthropic bills those
 * at 2x the base input, five-minute ones at 1.25x), so the kinds other than `cacheWrite1h` add up
 * to the whole bill.
 * https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#tracking-cache-performance
 * https://platform.openai.com/docs/guides/prompt-caching
 */
import type { Usage } from '../format/current.ts';

export const TOKEN_KINDS = ['input', 'cacheWrite', 'cacheWrite1h', 'cacheRead', 'output'] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];
export type BilledTokens = Record<TokenKind, number>;

export function noTokens(): BilledTokens {
  return { input: 0, cacheWrite: 0, cacheWrite1h: 0, cacheRead: 0, output: 0 };
}

/** The billed tokens of one answer, by kind; `format` is the request's wire format. */
export function billedTokens(format: string | undefined, usage: Usage): BilledTokens {
  const input = usage.inputTokens ?? 0;
  const cacheRead = usage.cacheReadTokens ?? 0;
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  return {
    input: format === 'anthropic' ? input : Math.max(0, input - cacheRead),
    cacheWrite,
    cacheWrite1h: Math.min(usage.cacheWrite1hTokens ?? 0, cacheWrite),
    cacheRead,
    output: usage.outputTokens ?? 0,
  };
}

/** `a + b`, kind by kind. */
export function addTokens(a: BilledTokens, b: BilledTokens): BilledTokens {
  return {
    input: a.input + b.input,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    cacheWrite1h: a.cacheWrite1h + b.cacheWrite1h,
    cacheRead: a.cacheRead + b.cacheRead,
    output: a.output + b.output,
  };
}
