import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The gateway's Prometheus metrics, one registry per app (no global state). */
export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'oda_requests_total',
    help: 'HTTP requests served, by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });
  readonly upstreamLatency = new Histogram({
    name: 'oda_upstream_latency_seconds',
    help: 'Time from sending a request upstream to its response headers, by provider',
    labelNames: ['provider'] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'oda_upstream_retries_total',
    help: 'Transport retries, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly repairs = new Counter({
    name: 'oda_repair_rounds_total',
    help: 'Repair rounds (image set-aside, overflow trimming), by kind',
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

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }
}
