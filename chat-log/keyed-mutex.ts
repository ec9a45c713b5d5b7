/**
 * An in-process mutex per key, as a promise chain: callers of one key run one after another in
 * arrival order, callers of different keys never wait for each other. Idle keys are forgotten so
 * the map does not grow with every chat ever touched.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` once every earlier holder of `key` has finished (whether it resolved or threw). */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** True while `key` has a holder or a caller waiting for it. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Resolves once every holder that has queued so far is done. */
  async idle(): Promise<void> {
    await Promise.all([...this.tails.values()]);
  }
}
