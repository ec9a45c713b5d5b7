/**
 * The configuration's shape (SPEC section 1): every key, its default and what it accepts, as one zod
 * schema, and the types read from it. Loading, environment overrides and the checks that span
 * several keys are in `config.ts`.
 */
import { z } from 'zod';
import { parseByteSize, parseDuration } from '../lib/duration.ts';
import { countCodePoints } from '../lib/code-points.ts';
import { TRIM_MARKER } from '../lib/trim-marker.ts';
const TRIM_MARKER_CHARS = countCodePoints(TRIM_MARKER);

const nonNegInt = z.number().int().nonnegative();
const ratio = z.number().min(0).max(1);

const durationSchema = z
  .union([z.string(), z.number()])
  .refine((v) => parseDuration(v) !== undefined, {
    message: 'expected a duration such as 500ms, 30s, 5m, 1h, 1d or a bare number of minutes',
  })
  .transform((v) => parseDuration(v)!);

const byteSizeSchema = z
  .union([z.string(), z.number()])
  .refine((v) => parseByteSize(v) !== undefined, {
    message: 'expected a size such as 50mb, 512kb or a number of bytes',
  })
  .transform((v) => parseByteSize(v)!);

/** A web origin as browsers send it in `Origin`: scheme://host[:port], no path. */
const originSchema = z
  .string()
  .refine((v) => {
    if (!URL.canParse(v)) return false;
    const u = new URL(v);
    return (
      /^https?:$/.test(u.protocol) &&
      u.pathname === '/' &&
      !/^[a-z]+:\/\/[^/]*\/./i.test(v) &&
      !u.search &&
      !u.hash &&
      !u.username &&
      !u.password
    );
  }, 'expected an origin such as https://app.example.com (scheme, host and port only)')
  .transform((v) => new URL(v).origin);

/** Prompt caching for requests that ask for none (SPEC section 11): `auto` adds it, `off` never. */
const promptCachingMode = z.enum(['auto', 'off']);
/** A provider's own prompt-caching settings; unset keys follow the top-level `promptCaching`. */
const providerPromptCachingSchema = z.strictObject({
  mode: promptCachingMode.optional(),
  /**
   * Anthropic format: `breakpoints` (explicit `cache_control` on blocks, accepted wherever Anthropic's
   * prompt caching is) or `automatic` (Anthropic's request-level `cache_control`).
   */
  style: z.enum(['breakpoints', 'automatic']).default('breakpoints'),
  /** OpenAI format: the provider accepts `prompt_cache_key` (false for a server that refuses it). */
  cacheKey: z.boolean().default(true),
});

const providerSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1-64 of A-Za-z0-9._-'),
  format: z.enum(['openai', 'anthropic']),
  baseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
  /** Sent as a header value: printable ASCII only (a trailing newline from a secret file is refused). */
  apiKey: z
    .string()
    .min(1)
    .regex(
      /^[\x21-\x7e]+$/,
      'expected printable ASCII without spaces or line breaks (a trailing newline from a file or secret?)',
    )
    .optional(),
  models: z.array(z.string().min(1)).min(1).default(['*']),
  /**
   * The `anthropic-beta` values clients may send to this provider (names or `*` globs); unset: all.
   * Betas not listed are removed from the header before it goes upstream.
   */
  anthropicBetas: z
    .array(z.string().regex(/^[A-Za-z0-9._*-]{1,128}$/, 'expected a beta name or glob'))
    .optional(),
  promptCaching: providerPromptCachingSchema.prefault({}),
  /**
   * OpenAI format: a streamed Chat Completions request whose client did not ask for the answer's
   * usage asks for it (`stream_options.include_usage`), so the call can be billed (`auto`); `off`
   * for a compatible server that refuses `stream_options` (SPEC section 11).
   */
  streamUsage: z.enum(['auto', 'off']).default('auto'),
});

const modelFactsSchema = z.strictObject({
  contextWindow: z.number().int().positive().optional(),
});

const toolResultTrimmingSchema = z
  .object({
    thresholdChars: z.number().int().positive().default(8192),
    headChars: nonNegInt.default(4096),
    tailChars: nonNegInt.default(1024),
  })
  .strict()
  .superRefine((v, ctx) => {
    const need = v.headChars + TRIM_MARKER_CHARS + v.tailChars;
    if (need > v.thresholdChars) {
      ctx.addIssue({
        code: 'custom',
        message: `headChars (${v.headChars}) + marker (${TRIM_MARKER_CHARS}) + tailChars (${v.tailChars}) = ${need} must fit in thresholdChars (${v.thresholdChars})`,
        path: ['thresholdChars'],
      });
    }
  });

const pruningSchema = z
  .strictObject({
    mode: z.enum(['off', 'cache-ttl']).optional(),
    ttl: durationSchema.optional(),
    keepLastAssistants: nonNegInt.default(3),
    softTrimRatio: ratio.default(0.3),
    hardClearRatio: ratio.default(0.5),
    minPrunableToolChars: nonNegInt.default(50_000),
    softTrim: z
      .strictObject({
        maxChars: nonNegInt.default(4000),
        headChars: nonNegInt.default(1500),
        tailChars: nonNegInt.default(1500),
      })
      .prefault({}),
    hardClear: z
      .strictObject({
        enabled: z.boolean().default(true),
        placeholder: z.string().default('[Old tool result content cleared]'),
      })
      .prefault({}),
    tools: z
      .strictObject({
        allow: z.array(z.string()).default([]),
        deny: z.array(z.string()).default([]),
      })
      .prefault({}),
    imageReplay: z
      .strictObject({
        enabled: z.boolean().default(true),
        keepTurns: nonNegInt.default(3),
        /** On a warm cache the kept window moves only once more images than this are behind it. */
        chunkImages: nonNegInt.default(10),
      })
      .prefault({}),
  })
  .prefault({});

const teamSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected 1-64 of A-Za-z0-9._-')
    .refine((n) => n !== '.' && n !== '..', 'a team name cannot be . or .. (it names a folder)'),
  keys: z.array(z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lowercase hex>')).min(1),
  requestsPerMinute: z.number().int().positive().optional(),
  /** Calls of this team in flight at once (over it: 429), so one team cannot take every connection. */
  maxConcurrent: z.number().int().positive().default(32),
});

/** The whole configuration file; every section optional. */
export const configSchema = z.strictObject({
  server: z
    .strictObject({
      host: z.string().min(1).default('127.0.0.1'),
      port: z.number().int().min(0).max(65535).default(8080),
      bodyLimit: byteSizeSchema.default(50 * 1024 * 1024),
      shutdownGraceMs: nonNegInt.default(10_000),
      /** Calls in flight in the whole gateway (over it: 429); also bounds the bodies held in memory. */
      maxConcurrent: z.number().int().positive().default(256),
      /**
       * Open client connections: at the cap the longest idle one is closed to make room, and a new
       * one is closed as it arrives only when every open one has a request in flight.
       */
      maxConnections: z.number().int().positive().default(1024),
      /** Open connections of one client address (IPv6: one /64), bounded like maxConnections. */
      maxConnectionsPerAddress: z.number().int().positive().default(256),
      /** Messages (or Responses `input` items) in one request (over it: 413). */
      maxMessages: z.number().int().positive().default(10_000),
      /** Images in one request (over it: 413). */
      maxImagesPerRequest: nonNegInt.default(500),
      /** Web origins (scheme://host[:port]) whose pages may call the gateway, besides its own. */
      allowedOrigins: z.array(originSchema).default([]),
      /** Host names a loopback-bound gateway answers besides localhost, 127.0.0.1 and [::1]. */
      allowedHosts: z
        .array(
          z
            .string()
            .regex(/^[A-Za-z0-9.-]{1,253}$/, 'expected a host name without port, such as gateway.local')
            .transform((h) => h.toLowerCase()),
        )
        .default([]),
    })
    .prefault({}),
  dataDir: z.string().min(1).default('./data'),
  attachmentsDir: z.string().min(1).optional(),
  store: z
    .discriminatedUnion('kind', [
      z.strictObject({
        kind: z.literal('file'),
        /** `batch`: acknowledged once written, fdatasync right behind; `always`: after fdatasync. */
        fsync: z.enum(['always', 'batch']).default('batch'),
      }),
      z.strictObject({
        kind: z.literal('redis'),
        url: z.string().regex(/^rediss?:\/\//, 'expected redis://host:port'),
        /** Prefix of every key, so several gateways can share one Redis. */
        prefix: z
          .string()
          .regex(/^[A-Za-z0-9._:{}-]{0,64}$/, 'expected 0-64 of A-Za-z0-9._:{}-')
          .default('oda:'),
      }),
    ])
    .default({ kind: 'file', fsync: 'batch' }),
  providers: z.array(providerSchema).default([]),
  models: z.record(z.string(), modelFactsSchema).default({}),
  retries: z
    .strictObject({
      maxRetries: nonNegInt.max(10).default(2),
      initialDelayMs: nonNegInt.default(500),
      maxDelayMs: nonNegInt.default(8000),
    })
    .prefault({}),
  timeouts: z
    .strictObject({
      connectMs: z.number().int().positive().default(10_000),
      firstByteMs: z.number().int().positive().default(600_000),
      idleMs: z.number().int().positive().default(300_000),
      /** Time for a request body to arrive whole (over it: 408 and the connection is closed). */
      bodyMs: z.number().int().positive().default(30_000),
    })
    .prefault({}),
  repairs: z
    .strictObject({
      /** Repair rounds per call at most, images and overflow together (taking back an ask of the gateway's own spends none). */
      maxRounds: z.number().int().positive().max(100).default(8),
    })
    .prefault({}),
  pruning: pruningSchema,
  toolResultTrimming: toolResultTrimmingSchema.prefault({}),
  compaction: z.strictObject({ thresholdRatio: ratio.default(0.8) }).prefault({}),
  promptCaching: z.strictObject({ mode: promptCachingMode.default('auto') }).prefault({}),
  teams: z.array(teamSchema).optional(),
  adminKeys: z
    .array(z.string().regex(/^sha256:[0-9a-f]{64}$/, 'expected sha256:<64 lowercase hex>'))
    .default([]),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type ConfigInput = z.input<typeof configSchema>;
export type Config = z.output<typeof configSchema> & { attachmentsDir: string };
export type ProviderConfig = Config['providers'][number];
export type PruningConfig = Config['pruning'];
export type PromptCachingConfig = Config['promptCaching'];
export type TrimmingConfig = Config['toolResultTrimming'];
