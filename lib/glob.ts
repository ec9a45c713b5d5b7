/** Matches `text` against a glob where `*` is the only wildcard. */
export function globMatch(pattern: string, text: string, opts: { caseInsensitive?: boolean } = {}): boolean {
  const escaped = pattern.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`^${escaped.join('.*')}$`, opts.caseInsensitive ? 'is' : 's');
  return re.test(text);
}
