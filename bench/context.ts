/** What every benchmark gets from the runner. */
export interface BenchContext {
  /** A short pass: fewer rounds, shorter runs, smaller sizes where that keeps the point. */
  readonly quick: boolean;
  /** `--chats=N`: the number of chats of the many-chats benchmark. */
  readonly chats?: number;
  /** One line of progress on stderr (the report itself goes to stdout). */
  progress(message: string): void;
}
