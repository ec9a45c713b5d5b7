/**
 * Masks known secrets (the configured provider keys) in text that leaves the gateway or is logged,
 * such as a provider's error body echoing the key it was given (SPEC section 14).
 */

export const MASK = '[masked]';

/** Secrets shorter than this are not masked: they would match ordinary words. */
const MIN_SECRET_LENGTH = 8;

/** Each secret as is and JSON-escaped, longest first (so a key that contains another is masked whole). */
function secretForms(secrets: readonly (string | undefined)[]): string[] {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s === undefined || s.length < MIN_SECRET_LENGTH) continue;
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/** A function replacing every occurrence of each secret (as is, or JSON-escaped) with `[masked]`. */
export function secretMasker(secrets: readonly (string | undefined)[]): (text: string) => string {
  const list = secretForms(secrets);
  if (list.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.split(s).join(MASK);
    return out;
  };
}

/** `buf` with every occurrence of each form replaced by the mask (the same buffer when none occurs). */
function maskBytes(buf: Buffer, forms: readonly Buffer[], mask: Buffer): Buffer {
  let out = buf;
  for (const form of forms) {
    let at = out.indexOf(form);
    if (at < 0) continue;
    const parts: Buffer[] = [];
    let from = 0;
    while (at >= 0) {
      parts.push(out.subarray(from, at), mask);
      from = at + form.length;
      at = out.indexOf(form, from);
    }
    parts.push(out.subarray(from));
    out = Buffer.concat(parts);
  }
  return out;
}

/** Where the longest tail of `buf` that could be the start of a form begins (`buf.length` when none). */
function heldFrom(buf: Buffer, forms: readonly Buffer[]): number {
  let start = buf.length;
  for (const form of forms) {
    const first = form[0]!;
    // Only a proper prefix can be cut off at the end: a whole form was masked already.
    for (let i = Math.max(0, buf.length - form.length + 1); i < start; i++) {
      if (buf[i] !== first) continue;
      if (buf.subarray(i).equals(form.subarray(0, buf.length - i))) {
        start = i;
        break;
      }
    }
  }
  return start;
}

/** Masks the secrets in one byte stream's chunks, in order: each chunk, then the end. */
export interface ChunkMasker {
  /** The chunk masked, less a tail that could be the start of a secret cut by the chunk's end. */
  push(chunk: Uint8Array): Buffer | undefined;
  /** What was held back at the end. */
  end(): Buffer | undefined;
}

/**
 * A factory of chunk maskers for a byte stream (a provider's event stream, which may carry an error
 * naming the key): each chunk goes on at once, less only a tail that could be the start of a secret
 * cut by the chunk's end, which goes with the next chunk. Undefined when there is nothing to mask.
 */
export function secretChunkMasker(secrets: readonly (string | undefined)[]): (() => ChunkMasker) | undefined {
  const forms = secretForms(secrets).map((s) => Buffer.from(s, 'utf8'));
  if (forms.length === 0) return undefined;
  const mask = Buffer.from(MASK, 'utf8');
  return () => {
    let held: Buffer | undefined;
    return {
      push(chunk) {
        const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
        const buf = maskBytes(held ? Buffer.concat([held, bytes]) : bytes, forms, mask);
        const cut = heldFrom(buf, forms);
        held = cut < buf.length ? buf.subarray(cut) : undefined;
        return cut > 0 ? buf.subarray(0, cut) : undefined;
      },
      end() {
        const rest = held;
        held = undefined;
        return rest;
      },
    };
  };
}
