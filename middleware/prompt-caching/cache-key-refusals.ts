/**
 * The providers that refused the gateway's `prompt_cache_key` (SPEC section 11: the key goes only
 * to providers that accept the field). A compatible server that validates bodies strictly refuses
 * every request carrying a field it does not know; without this memory each request would pay a
 * refused attempt before going without the key. Kept in memory for the life of one gateway (each
 * `createApp` has its own): after a restart the first request learns it again, and the warning tells
 * the operator the lasting fix, `providers[].promptCaching.cacheKey: false`.
 */
export class CacheKeyRefusals {
  private readonly providers = new Set<string>();

  /** `onFirstRefusal` is told the first time each provider refuses the key (to log a warning). */
  constructor(private readonly onFirstRefusal: (provider: string) => void = () => {}) {}

  /** True when `provider` has refused the key. */
  refuses(provider: string): boolean {
    return this.providers.has(provider);
  }

  /** Remembers that `provider` refuses the key. */
  remember(provider: string): void {
    if (this.providers.has(provider)) return;
    this.providers.add(provider);
    this.onFirstRefusal(provider);
  }
}
