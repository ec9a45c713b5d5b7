/** The CLI's output, kept by the CLI tests: its stdout lines and its stderr lines, in order. */
import type { CliIo } from './cli.ts';

export function capture(): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l) };
}
