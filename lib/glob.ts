/** Compiled globs (a pure function's results: a pattern always compiles the same), bounded. */
const compiled = new Map<string, RegExp>();
const MAX_COMPILED = 1000;

function compile(pattern: string, flags: string): RegExp {
  const key = `${flags}:${pattern}`;
  let re = compiled.get(key);
  if (!re) {
    const escaped = pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
    re = new RegExp(`^${escaped.join('.*')}$`, flags);
    if (compiled.size >= MAX_COMPILED) compiled.clear();
    compiled.set(key, re);
  }
  return re;
}

/** Matches `text` against a glob where `*` is the only wildcard. */
export function globMatch(pattern: string, text: string, opts: { caseInsensitive?: boolean } = {}): boolean {
  return compile(pattern, opts.caseInsensitive ? 'is' : 's').test(text);
}
