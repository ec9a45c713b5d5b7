import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What the chat log holds in memory, as `ChatLog.stats()` tells it. */
export interface ChatMemoryStats {
  readModels: number;
  openChats: number;
  openFiles?: number;
  indexedChats?: number;
  indexing?: boolean;
}

/** How an attempt upstream ended, for `oda_upstream_latency_seconds{outcome}`. */
export type UpstreamOutcome = 'answered' | 'failed' | 'aborted';

/** The gateway's Prometheus metrics, one registry per app (no global state). */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'oda_requests_total',
    help: 'HTTP requests, whole or cut short, by route and the status sent (none: ended before a status went out)',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  readonly requestsCut = new Counter({
    name: 'oda_requests_cut_total',
    help: "Requests whose response ended before it was whole, or whose stream carried an answer that did not come whole (counted in oda_requests_total too), by route and reason: client (went away), upstream (the provider's answer broke off, or its stream closed before saying it was over), provider-error:<type> (the provider said inside its stream that the answer failed, with that error type; other for a type not in the gateway's list), shutdown (the grace period ended), error (the gateway failed after the response started)",
    labelNames: ['route', 'reason'] as const,
    registers: [this.registry],
  });
  readonly connectionsClosed = new Counter({
    name: 'oda_connections_closed_total',
    help: "Client connections the connection bounds closed, by reason: idle (a connection with no request in flight, closed to make room at server.maxConnections or server.maxConnectionsPerAddress), refused-gateway and refused-address (a new connection closed as it arrived: every connection under server.maxConnections, or under its address's server.maxConnectionsPerAddress, had a request in flight)",
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly upstreamLatency = new Histogram({
    name: 'oda_upstream_latency_seconds',
    help: 'Time from sending a request upstream to how it ended, per attempt, by provider and outcome: answered (its response headers came, whatever the status: the time to them), failed (no answer: the connection failed or broke, a timeout, an error body past its cap, a redirect; the time to the failure), aborted (the client left or the shutdown cut it before an answer)',
    labelNames: ['provider', 'outcome'] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'oda_upstream_retries_total',
    help: 'Transport retries made (a retry the client left before is not), by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly retriesGivenUp = new Counter({
    name: 'oda_upstream_retries_given_up_total',
    help: 'Retryable provider failures passed back without a further retry, by reason: retries-exhausted (the budget is spent) or retry-delay-too-long (the provider asked for a longer wait than retries.maxDelayMs)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly repairs = new Counter({
    name: 'oda_repair_rounds_total',
    help: 'Repair rounds (image set-aside, overflow trimming, a refused prompt-cache key or stream-usage ask taken out), by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly trimmedResults = new Counter({
    name: 'oda_tool_results_trimmed_total',
    help: 'Tool results trimmed at the compaction point',
    registers: [this.registry],
  });
  readonly trimmedChars = new Counter({
    name: 'oda_tool_result_chars_removed_total',
    help: 'Characters removed by tool-result trimming',
    registers: [this.registry],
  });
  readonly imagesSetAside = new Counter({
    name: 'oda_images_set_aside_total',
    help: 'Images set aside after image-limit refusals',
    registers: [this.registry],
  });
  readonly imageRounds = new Counter({
    name: 'oda_image_set_aside_rounds_total',
    help: 'Image set-aside rounds',
    registers: [this.registry],
  });
  readonly pruned = new Counter({
    name: 'oda_pruned_tool_results_total',
    help: 'Tool results changed by cache-TTL pruning passes, by action',
    labelNames: ['action'] as const,
    registers: [this.registry],
  });
  readonly prunedChars = new Counter({
    name: 'oda_pruning_chars_removed_total',
    help: 'Characters removed by cache-TTL pruning passes',
    registers: [this.registry],
  });
  readonly imageReplayRemoved = new Counter({
    name: 'oda_image_replay_removed_total',
    help: 'Old images and media references replaced by the image replay clean-up',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'oda_tokens_total',
    help: 'Tokens of answered model calls, by kind: billed (input, cache_write, cache_read, output, from the provider usage; cache_write_1h is the part of cache_write written to a one-hour cache) and estimated tokens removed by each mechanism (removed_by_<mechanism>)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly answersUnrecorded = new Counter({
    name: 'oda_answers_unrecorded_total',
    help: 'Answers the client got that are missing from the chat log (their response event, model message or usage), by why they were given up: expired (the store did not answer again within the wait), full (too many answers were already waiting), refused (the store refused the record), shutdown (still waiting when the gateway stopped), too-large (a streamed answer larger than the gateway logs: the client got it, the log has its response event and usage but not its content)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly answersWaiting = new Gauge({
    name: 'oda_answers_waiting_to_be_recorded',
    help: 'Answers the client got whose record in the chat log failed, kept in memory and tried again in the background until the store answers',
    registers: [this.registry],
  });
  readonly historyMessages = new Counter({
    name: 'oda_history_messages_total',
    help: "Messages of model calls' histories, by how the gateway matched them with the chat log: recognised (from the bytes of a request of the chat bound before) or compared (normalized, digested and compared)",
    labelNames: ['how'] as const,
    registers: [this.registry],
  });

  /** Event-loop delay since the last scrape (a 20 ms sampling timer, stopped by `close`). */
  private readonly loopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: 20 });
  private chatStats: () => ChatMemoryStats | undefined = () => undefined;

  /**
   * The process metrics are always there (SPEC section 13): resident memory, heap, event-loop lag,
   * CPU. `defaultMetrics` adds prom-client's whole default set instead of this small one.
   */
  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) {
      collectDefaultMetrics({ register: this.registry });
      this.loopDelay.disable();
    } else {
      this.processMetrics();
    }
    const chats = () => this.chatStats();
    new Gauge({
      name: 'oda_open_chats',
      help: 'Chats the gateway holds in memory, by what it holds: read models, log state (line offsets, headers), open log files',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect() {
        const s = chats();
        if (!s) return;
        this.set({ kind: 'read_models' }, s.readModels);
        this.set({ kind: 'log_state' }, s.openChats);
        if (s.openFiles !== undefined) this.set({ kind: 'log_files' }, s.openFiles);
      },
    });
    new Gauge({
      name: 'oda_chat_index_chats',
      help: 'Chats in the chat index that GET /v1/sessions pages through',
      registers: [this.registry],
      collect() {
        const n = chats()?.indexedChats;
        if (n !== undefined) this.set(n);
      },
    });
    new Gauge({
      name: 'oda_chat_index_rebuilding',
      help: '1 while the chat index is being brought up to date from the chat log (listings may miss chats)',
      registers: [this.registry],
      collect() {
        this.set(chats()?.indexing ? 1 : 0);
      },
    });
  }

  /**
   * Observes one attempt upstream that started at `started` (`performance.now()`) and ended now:
   * with its response headers, without an answer, or cut by the client or the shutdown.
   */
  observeUpstream(provider: string, outcome: UpstreamOutcome, started: number): void {
    this.upstreamLatency.observe({ provider, outcome }, (performance.now() - started) / 1000);
  }

  /** Where the chat-memory gauges read from (the app's chat log). */
  observeChats(stats: () => ChatMemoryStats): void {
    this.chatStats = stats;
  }

  /** Stops the event-loop sampling timer. */
  close(): void {
    this.loopDelay.disable();
  }

  private processMetrics(): void {
    const registers = [this.registry];
    const loop = this.loopDelay;
    loop.enable();
    new Gauge({
      name: 'process_resident_memory_bytes',
      help: 'Resident memory size in bytes',
      registers,
      collect() {
        this.set(process.memoryUsage.rss());
      },
    });
    new Gauge({
      name: 'nodejs_heap_size_used_bytes',
      help: 'V8 heap in use, in bytes',
      registers,
      collect() {
        this.set(process.memoryUsage().heapUsed);
      },
    });
    new Gauge({
      name: 'nodejs_external_memory_bytes',
      help: 'Memory of C++ objects bound to JavaScript objects (buffers), in bytes',
      registers,
      collect() {
        this.set(process.memoryUsage().external);
      },
    });
    new Counter({
      name: 'process_cpu_seconds_total',
      help: 'User and system CPU time spent, in seconds',
      registers,
      collect() {
        const { user, system } = process.cpuUsage();
        this.reset();
        this.inc((user + system) / 1e6);
      },
    });
    // Sampled since the previous scrape, then reset: the lag a scrape interval saw.
    const lag = (name: string, help: string, value: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(loop.count > 0 ? value() / 1e9 : 0);
        },
      });
    lag('nodejs_eventloop_lag_seconds', 'Mean event-loop delay since the last scrape, in seconds', () =>
      Math.max(0, loop.mean - 20e6),
    );
    lag(
      'nodejs_eventloop_lag_p99_seconds',
      '99th percentile of the event-loop delay since the last scrape',
      () => Math.max(0, loop.percentile(99) - 20e6),
    );
    lag(
      'nodejs_eventloop_lag_max_seconds',
      'Longest event-loop delay since the last scrape, in seconds',
      () => {
        const max = Math.max(0, loop.max - 20e6);
        loop.reset();
        return max;
      },
    );
  }
}
