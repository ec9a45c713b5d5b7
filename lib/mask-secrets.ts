/**
 * Masks known secrets (the configured provider keys) in text that leaves the gateway or is logged,
 * such as a provider's error body echoing the key it was given (SPEC section 14).
 */

export const MASK = '[masked]';

/** Secrets shorter than this are not masked: they would match ordinary words. */
const MIN_SECRET_LENGTH = 8;

/** A function replacing every occurrence of each secret (as is, or JSON-escaped) with `[masked]`. */
export function secretMasker(secrets: readonly (string | undefined)[]): (text: string) => string {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s === undefined || s.length < MIN_SECRET_LENGTH) continue;
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  // Longest first, so a key that contains another is masked whole.
  const list = [...forms].sort((a, b) => b.length - a.length);
  if (list.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.split(s).join(MASK);
    return out;
  };
}
