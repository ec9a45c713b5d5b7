/**
 * Configuration at start-up: the file named by ODA_CONFIG (YAML or JSON) with `${VAR}` expanded,
 * then the environment's overrides, validated against `config-schema.ts` and frozen. An invalid
 * config is a `ConfigError` naming each key path and what it accepts.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { configSchema, type Config } from './config-schema.ts';

export type {
  Config,
  ConfigInput,
  PromptCachingConfig,
  ProviderConfig,
  PruningConfig,
  TrimmingConfig,
} from './config-schema.ts';

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
  if (schema instanceof z.ZodObject) return Object.keys(schema.shape);
  if (schema instanceof z.ZodUnion) {
    // A union of objects (the store's kinds): each option's keys, named by its discriminator.
    const discriminator = (schema.def as { discriminator?: string }).discriminator;
    return (schema.options as z.ZodType[]).flatMap((option) => {
      const o = unwrap(option);
      if (!(o instanceof z.ZodObject)) return [];
      const keys = Object.keys(o.shape).join(', ');
      const tag = discriminator ? (o.shape as Record<string, z.ZodType>)[discriminator] : undefined;
      const value = tag instanceof z.ZodLiteral ? String(tag.value) : undefined;
      return [value !== undefined ? `${keys} (${discriminator}: ${value})` : keys];
    });
  }
  return [];
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
  // Provider names, like team names, are one name in any case: the chat log and the stored
  // responses' records keep the name, and a re-cased name must still find its provider.
  const providerNames = new Map<string, number>();
  cfg.providers.forEach((p, i) => {
    const first = providerNames.get(p.name.toLowerCase());
    if (first !== undefined) {
      problems.push(
        `providers.${i}.name: duplicate provider name "${p.name}" (providers.${first}.name; names are compared without case)`,
      );
    } else providerNames.set(p.name.toLowerCase(), i);
  });
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
    const problem = baseUrlProblem(p.baseUrl);
    if (problem) problems.push(`providers.${i}.baseUrl: ${problem}`);
  });
  return problems;
}

/** What is wrong with a provider base URL, or undefined when it is a usable one. */
function baseUrlProblem(baseUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return 'expected an http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'expected an http(s) URL';
  if (url.username || url.password)
    return 'must not hold user info (user:password@); put a provider key in apiKey';
  if (url.search || baseUrl.includes('?')) return 'must not hold a query string';
  if (url.hash || baseUrl.includes('#')) return 'must not hold a fragment (#...)';
  return undefined;
}

/**
 * A YAML config file's value. A warning (an unknown tag such as `!sk-...`, whose value would be
 * read as something else than written) is refused like an error, and the parser prints neither: its
 * own report quotes the line, which may hold a key.
 */
function parseYaml(text: string): unknown {
  const doc = parseDocument(text);
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) throw problem;
  return doc.toJS();
}

/** The config file at `path` (YAML, or JSON for `.json`), parsed but not yet env-expanded. */
function readConfigFile(path: string): Record<string, unknown> {
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
    const json = /\.json$/i.test(path);
    throw new ConfigError(
      `config file ${path} is not valid ${json ? 'JSON' : 'YAML'}: ${parseErrorWhere(e, text, json)}`,
    );
  }
  if (parsed !== null && parsed !== undefined && (typeof parsed !== 'object' || Array.isArray(parsed))) {
    throw new ConfigError(`config file ${path} must hold an object at the top level`);
  }
  return (parsed ?? {}) as Record<string, unknown>;
}

/**
 * Loads configuration: the file named by ODA_CONFIG (YAML or JSON) when given, then the environment
 * (HOST, PORT, ODA_DATA_DIR, and the zero-config providers OPENAI_* / ANTHROPIC_*).
 */
export function loadConfig(env: Record<string, string | undefined>, configPath?: string): Readonly<Config> {
  const path = configPath ?? env.ODA_CONFIG;
  let raw: Record<string, unknown> = {};
  if (path) raw = (expandEnv(readConfigFile(path), env) as Record<string, unknown>) ?? {};
  raw = applyEnv(raw, env);
  return parseConfig(raw, { baseDir: process.cwd() });
}

/**
 * What a YAML or JSON parse error says, without the source text the parsers quote (a config file
 * holds keys, and this message goes to the terminal and to logs): the problem and where it is.
 */
function parseErrorWhere(e: unknown, text: string, json: boolean): string {
  const message = e instanceof Error ? e.message : String(e);
  if (!json) return yamlProblem(e, message);
  // Node's message quotes the text around the problem; some versions also give its position.
  const at = /position (\d+)/.exec(message);
  if (!at) return 'unexpected content';
  const before = text.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  const column = before.length - before.lastIndexOf('\n');
  return `unexpected content at line ${line}, column ${column}`;
}

/**
 * The YAML parser's description of a problem without what it quotes from the file: some of its
 * messages end with the text at fault (`Unresolved alias ...: <name>`, `Unresolved tag: <tag>`,
 * `Invalid escape sequence \\q`), which may be part of a key. Kept: the words before any quote,
 * and the line and column.
 */
function yamlProblem(e: unknown, message: string): string {
  let what = message.split('\n')[0]!.replace(/ at line \d+, column \d+:?\s*$/, '');
  const colon = what.indexOf(': ');
  if (colon !== -1) what = what.slice(0, colon);
  what = what.replace(/^(Invalid escape sequence|Plain value cannot start with)\b.*$/, '$1').trim();
  const at = (e as { linePos?: ReadonlyArray<{ line: number; col: number }> }).linePos?.[0];
  return at ? `${what} at line ${at.line}, column ${at.col}` : what;
}

/** Where a gateway keeps its chats: the `dataDir` and `store` of its config. */
export type StoreConfig = Pick<Config, 'dataDir' | 'store'>;

/**
 * The `dataDir` and `store` a gateway started with the same file and environment would use (see
 * `loadConfig`), for the command-line tools: only these keys are expanded and validated, so a
 * `${VAR}` elsewhere in the file (a provider key) need not be set in the operator's shell.
 */
export function loadStoreConfig(
  env: Record<string, string | undefined>,
  configPath?: string,
): Readonly<StoreConfig> {
  const path = configPath ?? env.ODA_CONFIG;
  const file = path ? readConfigFile(path) : {};
  const raw: Record<string, unknown> = {};
  for (const key of ['dataDir', 'store'] as const) {
    if (file[key] !== undefined) raw[key] = expandEnv(file[key], env, [key]);
  }
  const result = configSchema
    .pick({ dataDir: true, store: true })
    .safeParse(applyStoreEnv({ ...raw }, raw, env));
  if (!result.success) throw new ConfigError(`invalid configuration:\n${describeIssues(result.error)}`);
  const cfg = result.data;
  return deepFreeze({ ...cfg, dataDir: resolve(process.cwd(), cfg.dataDir) });
}

/**
 * The environment's say on where chats are kept: ODA_DATA_DIR, and ODA_STORE (`file` or `redis`,
 * with REDIS_URL) when the file names no store. A value that cannot be used stops start-up, named by
 * its variable: a gateway meant for a shared Redis must not run on a file store of its own.
 */
function applyStoreEnv(
  out: Record<string, unknown>,
  raw: Record<string, unknown>,
  env: Record<string, string | undefined>,
): Record<string, unknown> {
  if (env.ODA_DATA_DIR) out.dataDir = env.ODA_DATA_DIR;
  const kind = env.ODA_STORE;
  if (kind !== undefined && kind !== '' && kind !== 'file' && kind !== 'redis')
    throw new ConfigError(
      `invalid configuration:\nODA_STORE: expected file or redis, got ${JSON.stringify(kind)}`,
    );
  if (kind === 'redis' && raw.store === undefined) {
    const url = env.REDIS_URL;
    // The URL may hold a password: it is named, never shown.
    if (!url)
      throw new ConfigError('invalid configuration:\nODA_STORE: redis needs REDIS_URL (redis://host:port)');
    if (!/^rediss?:\/\//.test(url))
      throw new ConfigError(
        'invalid configuration:\nREDIS_URL: expected redis://host:port or rediss://host:port',
      );
    out.store = { kind: 'redis', url };
  }
  return out;
}

function applyEnv(
  raw: Record<string, unknown>,
  env: Record<string, string | undefined>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  const server = { ...((raw.server as Record<string, unknown> | undefined) ?? {}) };
  if (env.HOST) server.host = env.HOST;
  if (env.PORT !== undefined && env.PORT !== '') {
    const port = /^[0-9]{1,5}$/.test(env.PORT) ? Number(env.PORT) : Number.NaN;
    // 0 asks the system for a free port (tests, a supervisor that reads the listening address).
    if (!(port >= 0 && port <= 65_535))
      throw new ConfigError(`PORT: expected a port number from 0 to 65535, got "${env.PORT}"`);
    server.port = port;
  }
  out.server = server;
  applyStoreEnv(out, raw, env);
  if (raw.providers === undefined) {
    // Zero-config: one provider per format from the environment. A bad base URL is named by the
    // variable that set it (there is no config key to name); an empty one counts as unset.
    for (const name of ['OPENAI_BASE_URL', 'ANTHROPIC_BASE_URL'] as const) {
      const value = env[name];
      if (!value) continue;
      const problem = baseUrlProblem(value);
      if (problem) throw new ConfigError(`invalid configuration:\n${name}: ${problem}`);
    }
    for (const name of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'] as const) {
      const value = env[name];
      if (value && !/^[\x21-\x7e]+$/.test(value)) {
        throw new ConfigError(
          `invalid configuration:\n${name}: expected printable ASCII without spaces or line breaks (a trailing newline from a file or secret?)`,
        );
      }
    }
    out.providers = [
      {
        name: 'openai',
        format: 'openai',
        baseUrl: env.OPENAI_BASE_URL || 'https://api.openai.com/v1',
        ...(env.OPENAI_API_KEY ? { apiKey: env.OPENAI_API_KEY } : {}),
        models: ['*'],
      },
      {
        name: 'anthropic',
        format: 'anthropic',
        baseUrl: env.ANTHROPIC_BASE_URL || 'https://api.anthropic.com',
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
