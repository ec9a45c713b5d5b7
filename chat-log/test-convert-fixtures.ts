/** The format fixtures of every chat log version, read and converted, for the convert tests. */
import { readFileSync } from 'node:fs';
import { readLogText, upgradeToCurrent } from './convert.ts';
import type { FormatVersion } from './format/index.ts';

export const fixture = (v: FormatVersion) => new URL(`./__fixtures__/v${v}.jsonl`, import.meta.url).pathname;
export const fixtureText = (v: FormatVersion) => readFileSync(fixture(v), 'utf8');

export function convert(v: FormatVersion) {
  const read = readLogText(fixtureText(v));
  return upgradeToCurrent(read.version, read.header, read.events);
}
