/**
 * The providers that refused the `stream_options` the gateway asks a streamed Chat Completions
 * answer's usage with (SPEC section 11): an OpenAI-compatible server without stream options may
 * refuse the field. Without this memory each streamed request to it would pay a refused attempt
 * before going without. Kept in memory for the life of one gateway (each `createApp` has its own):
 * after a restart the first request learns it again, and the warning tells the operator the lasting
 * fix, `providers[].streamUsage: off`.
 */
export class StreamUsageRefusals {
  private readonly providers = new Set<string>();

  /** `onFirstRefusal` is told the first time each provider refuses the field (to log a warning). */
  constructor(private readonly onFirstRefusal: (provider: string) => void = () => {}) {}

  /** True when `provider` has refused `stream_options`. */
  refuses(provider: string): boolean {
    return this.providers.has(provider);
  }

  /** Remembers that `provider` refuses `stream_options`. */
  remember(provider: string): void {
    if (this.providers.has(provider)) return;
    this.providers.add(provider);
    this.onFirstRefusal(provider);
  }
}
