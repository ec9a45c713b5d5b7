/**
 * The owners of logged output items, with what this process learned of them kept in memory. An
 * item's owner is recorded once, when its response is logged, and its team never changes, so an
 * owner once read is kept (the most recently used `MAX_KNOWN`). The typed items of a Responses
 * history (`reasoning`, `message`, `function_call` with the provider's `id`) are checked on every
 * turn, and a stateless client resends the whole history each time: an id the gateway does not
 * know is remembered as unknown for `UNKNOWN_FOR_MS` too, so a long history costs map lookups, not
 * one read of the store per item per turn. `get`, used for `item_reference`s, never answers from
 * the unknown entries: a reference to an item another replica has just logged is read again.
 */
import type { ResponseOwner, ResponseOwners } from '../chat-log/response-owners.ts';
import type { Clock } from '../lib/clock.ts';

/** Owners kept in memory (an entry is an id and three short strings: a few MB at most). */
const MAX_KNOWN = 20_000;
/** Ids found unknown, kept for as long as `UNKNOWN_FOR_MS`. */
const MAX_UNKNOWN = 20_000;
const UNKNOWN_FOR_MS = 10 * 60_000;

export class CachedItemOwners implements ResponseOwners {
  private readonly known = new Map<string, ResponseOwner>();
  private readonly unknown = new Map<string, number>();

  constructor(
    private readonly store: ResponseOwners,
    private readonly clock: Clock,
  ) {}

  async get(id: string): Promise<ResponseOwner | undefined> {
    const hit = this.hit(id);
    if (hit) return hit;
    const owner = await this.store.get(id);
    if (owner) this.remember(id, owner);
    return owner;
  }

  async set(id: string, owner: ResponseOwner): Promise<void> {
    await this.store.set(id, owner);
    this.unknown.delete(id);
    this.remember(id, owner);
  }

  /**
   * The owner of `id` as far as a typed item's check needs it: from memory when this process has
   * read it, or found it unknown within `UNKNOWN_FOR_MS`; else read from the store.
   */
  async ownerOf(id: string): Promise<ResponseOwner | undefined> {
    const hit = this.hit(id);
    if (hit) return hit;
    const since = this.unknown.get(id);
    const now = this.clock.now();
    if (since !== undefined && now - since < UNKNOWN_FOR_MS) return undefined;
    const owner = await this.store.get(id);
    if (owner) {
      this.unknown.delete(id);
      this.remember(id, owner);
    } else {
      this.unknown.delete(id);
      this.unknown.set(id, now);
      if (this.unknown.size > MAX_UNKNOWN) this.unknown.delete(this.unknown.keys().next().value!);
    }
    return owner;
  }

  private hit(id: string): ResponseOwner | undefined {
    const owner = this.known.get(id);
    if (owner) {
      // Most recently used last.
      this.known.delete(id);
      this.known.set(id, owner);
    }
    return owner;
  }

  private remember(id: string, owner: ResponseOwner): void {
    this.known.delete(id);
    this.known.set(id, owner);
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
  }
}
