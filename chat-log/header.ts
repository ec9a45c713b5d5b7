/**
 * Header checks (seed 002, "Before trusting a header"): the id, the creation time and the working
 * folder are checked first with the seed's exact messages, then the whole header must be lossless,
 * then it must match the current version's header schema.
 */
import type { z } from 'zod';
import { OdaError } from '../lib/errors.ts';
import { assertLosslessMetadata } from './lossless.ts';
import { header as currentHeader, type Header } from './format/current.ts';

function refuse(message: string, param: string | null, cause?: unknown): OdaError {
  return new OdaError('ODA_ERR_INVALID_REQUEST', 400, message, { param, cause });
}

/** True for a POSIX absolute path without NUL bytes. */
export function isAbsoluteCwd(cwd: unknown): cwd is string {
  return typeof cwd === 'string' && cwd.startsWith('/') && !cwd.includes('\0');
}

/**
 * The checks every header version shares (id, createdAt, cwd, lossless metadata), in the seed's
 * order. Returns the header as a record for a version schema to parse.
 */
export function checkHeaderBasics(raw: unknown): Record<string, unknown> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw refuse('session metadata must be a JSON object', null);
  }
  const meta = raw as Record<string, unknown>;
  if (typeof meta.id !== 'string') throw refuse('id must be a string', 'id');
  const createdAt = meta.createdAt;
  if (
    typeof createdAt !== 'number' ||
    !Number.isSafeInteger(createdAt) ||
    createdAt < 0 ||
    Object.is(createdAt, -0)
  ) {
    throw refuse('session metadata createdAt must be a non-negative safe integer', 'createdAt');
  }
  if (Object.hasOwn(meta, 'cwd') && meta.cwd !== undefined && !isAbsoluteCwd(meta.cwd)) {
    throw refuse('cwd must be absolute', 'cwd');
  }
  assertLosslessMetadata(meta);
  return meta;
}

/** One line naming the field of the first schema issue, e.g. `depth: Too small: expected ...`. */
export function describeSchemaIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid';
  if (issue.code === 'unrecognized_keys') {
    const where = issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    return `${where}unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  }
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)';
  return `${field}: ${issue.message}`;
}

/** Parses a header with a version schema after the shared checks; refusals name the field. */
export function validateHeaderWith<S extends z.ZodType>(schema: S, raw: unknown): z.infer<S> {
  const meta = checkHeaderBasics(raw);
  const parsed = schema.safeParse(meta);
  if (!parsed.success) {
    throw refuse(
      `invalid chat log header: ${describeSchemaIssue(parsed.error)}`,
      parsed.error.issues[0]?.path.map(String).join('.') ?? null,
      parsed.error,
    );
  }
  return parsed.data;
}

/** Validates a current-version chat log header, throwing an `OdaError` with the seed's messages. */
export function validateHeader(raw: unknown): Header {
  return validateHeaderWith(currentHeader, raw);
}
