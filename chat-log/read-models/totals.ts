/** Public read model: counts and token totals of a chat, and when it was last active. */
import { z } from 'zod';
import type { ReadModel } from './read-model.ts';

const int = z.number().int().nonnegative();

const totalsState = z.strictObject({
  messageCount: int,
  requestCount: int,
  responseCount: int,
  failedResponseCount: int,
  inputTokens: int,
  outputTokens: int,
  cacheReadTokens: int,
  cacheWriteTokens: int,
  /** Of `cacheWriteTokens`, those written to a one-hour cache. */
  cacheWrite1hTokens: int,
  /** `at` of the latest event; null for an empty chat. */
  lastActivityAt: int.nullable(),
});
export type TotalsState = z.infer<typeof totalsState>;

export const totalsModel: ReadModel<TotalsState> = {
  name: 'totals',
  version: 2,
  internal: false,
  schema: totalsState,
  initial: () => ({
    messageCount: 0,
    requestCount: 0,
    responseCount: 0,
    failedResponseCount: 0,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    lastActivityAt: null,
  }),
  apply(state, e) {
    const s = { ...state, lastActivityAt: Math.max(state.lastActivityAt ?? 0, e.at) };
    if (e.type === 'message') s.messageCount++;
    else if (e.type === 'request') s.requestCount++;
    else if (e.type === 'response') {
      s.responseCount++;
      if (!e.ok) s.failedResponseCount++;
      const u = e.usage;
      if (u) {
        s.inputTokens += u.inputTokens ?? 0;
        s.outputTokens += u.outputTokens ?? 0;
        s.cacheReadTokens += u.cacheReadTokens ?? 0;
        s.cacheWriteTokens += u.cacheWriteTokens ?? 0;
        s.cacheWrite1hTokens += u.cacheWrite1hTokens ?? 0;
      }
    }
    return s;
  },
};
