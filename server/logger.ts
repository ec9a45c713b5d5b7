import { pino, type Logger } from 'pino';

const CENSOR = '[redacted]';

/** Header names whose values are credentials. */
const SECRET_HEADERS = ['authorization', 'x-api-key', 'api-key'] as const;

/**
 * Paths that may hold secrets, redacted by pino by their first key (a lookup per key of a line).
 * The same secrets one level down under any key (`<key>.headers.authorization`, `<key>.apiKey`)
 * are redacted by `redactNested`.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["api-key"]',
  'apiKey',
  'providers[*].apiKey',
  'config.providers[*].apiKey',
  'store.url',
  'config.store.url',
];

const has = (o: object, key: string) => Object.prototype.hasOwnProperty.call(o, key);

/** A shallow copy of `v` that keeps its prototype, and an error's message and stack. */
function copyOf(v: object): Record<string, unknown> {
  const copy = Object.assign(Object.create(Object.getPrototypeOf(v) as object | null) as object, v);
  if (v instanceof Error) Object.assign(copy, { message: v.message, stack: v.stack });
  return copy as Record<string, unknown>;
}

/** `v` with its own `headers`' credentials and its own `apiKey` censored; `v` itself when it has none. */
function censorOneLevel(v: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  const headers = has(v, 'headers') ? v.headers : undefined;
  if (headers !== null && typeof headers === 'object') {
    const h = headers as Record<string, unknown>;
    if (SECRET_HEADERS.some((n) => h[n] !== undefined)) {
      const censored = copyOf(h);
      for (const n of SECRET_HEADERS) if (censored[n] !== undefined) censored[n] = CENSOR;
      copy = copyOf(v);
      copy.headers = censored;
    }
  }
  if (has(v, 'apiKey') && v.apiKey !== undefined) {
    copy ??= copyOf(v);
    copy.apiKey = CENSOR;
  }
  return copy ?? v;
}

/**
 * Redacts credentials one level down under any key of a line or of a child logger's bindings:
 * `<key>.headers.{authorization,x-api-key,api-key}` and `<key>.apiKey`. pino's own wildcard paths
 * (`*.headers.authorization`) did the same by running its redactor, path parsing included, on every
 * value of every line, numbers and strings too: 21-22 KB of garbage per model call for a line and its
 * bindings. This looks only at object values and copies the line only when it holds a secret.
 */
export function redactNested(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key in fields) {
    if (!has(fields, key)) continue;
    const v = fields[key];
    if (v === null || typeof v !== 'object' || Array.isArray(v)) continue;
    const r = censorOneLevel(v as Record<string, unknown>);
    if (r !== v) (out ??= copyOf(fields))[key] = r;
  }
  return out ?? fields;
}

/**
 * The gateway's structured logger (pino); secrets are redacted. Without a destination, lines go to
 * stdout written synchronously: one write per line on the gateway's thread, never a hop to the
 * thread pool and back per line (which cost more than the line), and nothing held back for a crash
 * to lose.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const logger = pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      formatters: { log: redactNested },
      base: { service: 'oda-gateway' },
    },
    (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: true }),
  );
  // pino applies no formatter to a child's bindings, so they are redacted on the way in. A child is
  // made from its parent's prototype chain, so children of children take this child() too.
  type Child = (this: Logger, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => Logger;
  // (pino's child() is generic over custom levels, which the gateway does not use.)
  const pinoChild = logger.child as unknown as Child;
  const child: Child = function (bindings, options) {
    return pinoChild.call(this, redactNested(bindings), options);
  };
  logger.child = child as unknown as Logger['child'];
  return logger;
}

export type { Logger };
