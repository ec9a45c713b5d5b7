import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
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
  apiKey: z.string().min(1).optional(),
  models: z.array(z.string().min(1)).min(1).default(['*']),
  /**
   * The `anthropic-beta` values clients may send to this provider (names or `*` globs); unset: all.
   * Betas not listed are removed from the header before it goes upstream.
   */
  anthropicBetas: z
    .array(z.string().regex(/^[A-Za-z0-9._*-]{1,128}$/, 'expected a beta name or glob'))
    .optional(),
  promptCaching: providerPromptCachingSchema.prefault({}),
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
      /** Open client connections; further ones are closed as they arrive. */
      maxConnections: z.number().int().positive().default(1024),
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
      /** Repair rounds (image set-aside, overflow trimming) per call at most. */
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

/** Raised when configuration is invalid; the message names each key path and what is allowed. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length ? issue.path.join('.') : '(root)';
      if (issue.code === 'unrecognized_keys') {
        const allowed = allowedKeysAt(issue.path);
        return `${path}: unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}; allowed keys are ${allowed.join(', ')}`;
      }
      return `${path}: ${issue.message}`;
    })
    .join('\n');
}

/** Lists the keys the object schema at `path` accepts (for unknown-key messages). */
function allowedKeysAt(path: PropertyKey[]): string[] {
  let schema: z.ZodType = configSchema;
  for (const seg of path) {
    schema = unwrap(schema);
    if (schema instanceof z.ZodObject)
      schema = (schema.shape as Record<string, z.ZodType>)[String(seg)] ?? schema;
    else if (schema instanceof z.ZodArray) schema = schema.element as z.ZodType;
    else if (schema instanceof z.ZodRecord) schema = schema.valueType as z.ZodType;
  }
  schema = unwrap(schema);
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s: z.ZodType = schema;
  for (let i = 0; i < 10; i++) {
    const def = (s as unknown as { def: { innerType?: z.ZodType; in?: z.ZodType; type: string } }).def;
    if (def.innerType) s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else break;
  }
  return s;
}

/** Replaces `${VAR}` in every string value with the environment's value (missing = error). */
export function expandEnv(
  value: unknown,
  env: Record<string, string | undefined>,
  path: string[] = [],
): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const v = env[name];
      if (v === undefined)
        throw new ConfigError(`${path.join('.') || '(root)'}: environment variable ${name} is not set`);
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, [...path, String(i)]));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, [...path, k])]));
  }
  return value;
}

/** Validates a raw config object (already env-expanded) and returns the frozen config. */
export function parseConfig(raw: unknown, opts: { baseDir?: string } = {}): Readonly<Config> {
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) throw new ConfigError(`invalid configuration:\n${describeIssues(result.error)}`);
  const cfg = result.data;
  const baseDir = opts.baseDir ?? process.cwd();
  const dataDir = isAbsolute(cfg.dataDir) ? cfg.dataDir : resolve(baseDir, cfg.dataDir);
  const attachmentsDir = cfg.attachmentsDir
    ? isAbsolute(cfg.attachmentsDir)
      ? cfg.attachmentsDir
      : resolve(baseDir, cfg.attachmentsDir)
    : resolve(dataDir, 'attachments');
  const names = new Set<string>();
  for (const p of cfg.providers) {
    if (names.has(p.name))
      throw new ConfigError(`invalid configuration:\nproviders: duplicate provider name "${p.name}"`);
    names.add(p.name);
  }
  const problems = crossChecks(cfg);
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n${problems.join('\n')}`);
  return deepFreeze({ ...cfg, dataDir, attachmentsDir });
}

/**
 * Checks that span several keys (SPEC section 14): a gateway whose config would silently be less
 * safe than it reads is refused at start, with the key path of each problem.
 */
function crossChecks(cfg: z.output<typeof configSchema>): string[] {
  const problems: string[] = [];
  const teams = cfg.teams ?? [];
  if (teams.length === 0 && cfg.adminKeys.length > 0) {
    problems.push(
      'adminKeys: admin keys need teams; without teams the gateway is open to anyone who can reach it, ' +
        'so an admin key would protect nothing (add teams, or remove adminKeys)',
    );
  }
  const teamNames = new Map<string, number>();
  teams.forEach((t, i) => {
    const first = teamNames.get(t.name.toLowerCase());
    if (first !== undefined) {
      problems.push(
        `teams.${i}.name: duplicate team name "${t.name}" (teams.${first}.name; names are compared without case)`,
      );
    } else teamNames.set(t.name.toLowerCase(), i);
    if (t.maxConcurrent >= cfg.server.maxConcurrent) {
      problems.push(
        `teams.${i}.maxConcurrent: ${t.maxConcurrent} must be below server.maxConcurrent (${cfg.server.maxConcurrent}), ` +
          'so one team cannot take every upstream connection',
      );
    }
  });
  const keys = new Map<string, string>();
  const listKey = (key: string, where: string) => {
    const first = keys.get(key);
    if (first !== undefined) problems.push(`${where}: this key is listed twice (also at ${first})`);
    else keys.set(key, where);
  };
  teams.forEach((t, i) => t.keys.forEach((k, j) => listKey(k, `teams.${i}.keys.${j}`)));
  cfg.adminKeys.forEach((k, i) => listKey(k, `adminKeys.${i}`));
  cfg.providers.forEach((p, i) => {
    const url = new URL(p.baseUrl);
    if (url.username || url.password) {
      problems.push(
        `providers.${i}.baseUrl: must not hold user info (user:password@); put a provider key in apiKey`,
      );
    }
    if (url.search || p.baseUrl.includes('?')) {
      problems.push(`providers.${i}.baseUrl: must not hold a query string`);
    }
    if (url.hash || p.baseUrl.includes('#')) {
      problems.push(`providers.${i}.baseUrl: must not hold a fragment (#...)`);
    }
  });
  return problems;
}

/**
 * Loads configuration: the file named by ODA_CONFIG (YAML or JSON) when given, then the environment
 * (HOST, PORT, ODA_DATA_DIR, and the zero-config providers OPENAI_* / ANTHROPIC_*).
 */
export function loadConfig(env: Record<string, string | undefined>, configPath?: string): Readonly<Config> {
  const path = configPath ?? env.ODA_CONFIG;
  let raw: Record<string, unknown> = {};
  if (path) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read config file ${path}: ${(e as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
    } catch (e) {
      throw new ConfigError(
        `config file ${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(e as Error).message}`,
      );
    }
    if (parsed !== null && parsed !== undefined && (typeof parsed !== 'object' || Array.isArray(parsed))) {
      throw new ConfigError(`config file ${path} must hold an object at the top level`);
    }
    raw = (expandEnv(parsed ?? {}, env) as Record<string, unknown>) ?? {};
  }
  raw = applyEnv(raw, env);
  return parseConfig(raw, { baseDir: process.cwd() });
}

function applyEnv(
  raw: Record<string, unknown>,
  env: Record<string, string | undefined>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  const server = { ...((raw.server as Record<string, unknown> | undefined) ?? {}) };
  if (env.HOST) server.host = env.HOST;
  if (env.PORT) {
    const port = Number(env.PORT);
    if (!Number.isInteger(port)) throw new ConfigError(`PORT: expected a whole number, got "${env.PORT}"`);
    server.port = port;
  }
  out.server = server;
  if (env.ODA_DATA_DIR) out.dataDir = env.ODA_DATA_DIR;
  if (env.REDIS_URL && raw.store === undefined && env.ODA_STORE === 'redis')
    out.store = { kind: 'redis', url: env.REDIS_URL };
  if (raw.providers === undefined) {
    // Zero-config: one provider per format from the environment.
    out.providers = [
      {
        name: 'openai',
        format: 'openai',
        baseUrl: env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
        ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}),
        models: ['*'],
      },
      {
        name: 'anthropic',
        format: 'anthropic',
        baseUrl: env.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com',
        ...(env.ANTHROPIC_API_KEY ? { apiKey: env.ANTHROPIC_API_KEY } : {}),
        models: ['*'],
      },
    ];
  }
  return out;
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}
