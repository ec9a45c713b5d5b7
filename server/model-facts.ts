import type { Config } from '../config/config.ts';
import { globMatch } from '../lib/glob.ts';

/** Context windows of well-known models, used when the config has no `models` entry. */
const BUILT_IN: ReadonlyArray<[string, number]> = [
  ['claude-*', 200_000],
  ['gpt-4.1*', 1_047_576],
  ['gpt-5*', 400_000],
  ['gpt-4o*', 128_000],
  ['gpt-4-turbo*', 128_000],
  ['o1*', 200_000],
  ['o3*', 200_000],
  ['o4*', 200_000],
  ['gpt-3.5-turbo*', 16_385],
];

/** The model's context window in tokens: config first (first matching glob), then built-in facts. */
export function contextWindowFor(config: Pick<Config, 'models'>, model: string): number | undefined {
  for (const [glob, facts] of Object.entries(config.models)) {
    if (globMatch(glob, model)) return facts.contextWindow;
  }
  return BUILT_IN.find(([glob]) => globMatch(glob, model))?.[1];
}
