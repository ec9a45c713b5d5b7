import { pino, type Logger } from 'pino';

/** Paths that may hold secrets or image data; pino replaces them before a line is written. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["api-key"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["api-key"]',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers["api-key"]',
  'apiKey',
  '*.apiKey',
  'providers[*].apiKey',
  'config.providers[*].apiKey',
  'store.url',
  'config.store.url',
];

/**
 * The gateway's structured logger (pino); secrets are redacted. Without a destination, lines go to
 * stdout written synchronously: one write per line on the gateway's thread, never a hop to the
 * thread pool and back per line (which cost more than the line), and nothing held back for a crash
 * to lose.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'oda-gateway' } },
    (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 1, sync: true }),
  );
}

export type { Logger };
