/**
 * Reserved (retired) fields: a slot the format keeps but that must never carry data again (seed
 * 002). Giving one data back is a type change that needs a new format version; a record that tries
 * is refused when the log is read or written.
 */
import { CURRENT_VERSION, type FormatVersion } from './format/index.ts';

/** Per version: event type -> reserved field names, with why each was retired. */
export const RESERVED_FIELDS: Partial<Record<FormatVersion, Record<string, Record<string, string>>>> = {
  4: { request: { notes: 'retired in v4: a tool result is a message of its own, with role tool' } },
  5: { request: { notes: 'retired in v4: a tool result is a message of its own, with role tool' } },
};

/** An event that fills a reserved field. */
export class ReservedFieldError extends Error {
  readonly field: string;

  constructor(eventType: string, field: string, why: string) {
    super(`reserved field ${eventType}.${field} must stay empty (${why})`);
    this.name = 'ReservedFieldError';
    this.field = `${eventType}.${field}`;
  }
}

/** Throws a {@link ReservedFieldError} when `event` carries a value in a reserved field. */
export function assertReservedEmpty(event: unknown, version: FormatVersion = CURRENT_VERSION): void {
  if (typeof event !== 'object' || event === null) return;
  const rec = event as Record<string, unknown>;
  if (typeof rec.type !== 'string') return;
  const byType = RESERVED_FIELDS[version];
  if (byType === undefined || !Object.hasOwn(byType, rec.type)) return;
  const fields = byType[rec.type] ?? {};
  for (const [field, why] of Object.entries(fields)) {
    if (Object.hasOwn(rec, field) && rec[field] !== undefined)
      throw new ReservedFieldError(rec.type, field, why);
  }
}
