/** Where a command-line command writes; tests pass their own. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}
