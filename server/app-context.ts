import type { Clock } from '../lib/clock.ts';
import type { TurnTaker } from '../lib/in-turns.ts';
import type { ProviderRegistry } from '../providers/registry.ts';
import type { UpstreamClient } from '../providers/upstream-client.ts';
import type { ChatLog } from '../chat-log/chat-log.ts';
import type { ResponseOwners } from '../chat-log/response-owners.ts';
import type { UsageLedger } from '../chat-log/usage-ledger.ts';
import type { ChatBinder } from './chat-binder.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import type { Drain } from './drain.ts';
import type { CachedItemOwners } from './item-owners-cache.ts';
import type { UnrecordedAnswers } from './unrecorded-answers.ts';
import type { LimitedLog } from './limited-log.ts';
import type { ParsedLists } from './parsed-lists.ts';
import type { CacheKeyRefusals } from '../middleware/prompt-caching/cache-key-refusals.ts';
import type { StreamUsageRefusals } from '../middleware/stream-usage/stream-usage-refusals.ts';

/** Everything a route needs, built once by createApp. */
export interface AppContext {
  readonly config: Readonly<Config>;
  readonly logger: Logger;
  /** The lines a caller can cause at will (refusals), limited per kind and source. */
  readonly limitedLog: LimitedLog;
  readonly clock: Clock;
  readonly metrics: Metrics;
  readonly registry: ProviderRegistry;
  readonly upstream: UpstreamClient;
  readonly chatLog: ChatLog;
  readonly chats: ChatBinder;
  /** Large bodies' message lists as parsed, so a long chat's next request parses only what is new. */
  readonly parsedLists: ParsedLists;
  /** Which chat, team and provider each stored response id belongs to (SPEC section 9). */
  readonly responseOwners: ResponseOwners;
  /** The same for the output items of logged responses, which `item_reference`s name. */
  /** The owners of logged output items, those this process has read kept in memory. */
  readonly itemOwners: CachedItemOwners;
  /** Billed tokens and removals per team and day (SPEC section 11). */
  readonly usage: UsageLedger;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly random: () => number;
  /** The providers that refused the gateway's `prompt_cache_key`, learned from their refusals. */
  readonly cacheKeyRefusals: CacheKeyRefusals;
  /** The providers that refused the `stream_options` the gateway asks a stream's usage with. */
  readonly streamUsageRefusals: StreamUsageRefusals;
  /** Turns of the event loop for heavy stages, one request at a time, round robin between teams (SPEC section 14). */
  readonly turns: TurnTaker;
  /** True when clients' own provider credentials are forwarded (no teams configured). */
  readonly passThroughCredentials: boolean;
  /** Serving, draining on shutdown, or cutting what the grace period left. */
  readonly drain: Drain;
  /** Answers the client got whose record failed, tried again until the store answers. */
  readonly unrecorded: UnrecordedAnswers;
  /** Most characters of a streamed answer the chat log keeps (default `MAX_RECORDED_STREAM_CHARS`). */
  readonly maxRecordedStreamChars?: number;
}
