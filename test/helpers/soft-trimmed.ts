/**
 * The soft trim SPEC section 4 describes, with the default limits (4000 / 1500 / 1500), written out
 * as SPEC gives it rather than through the gateway's own code, so the e2e tests check the text the
 * provider receives against the contract.
 */
export function softTrimmed(text: string): string {
  return `${text.slice(0, 1500)}\n...\n${text.slice(-1500)}\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of ${text.length} chars.]`;
}
