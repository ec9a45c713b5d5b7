/**
 * The registry of chat log format versions: each version's frozen header and event schemas.
 * A log is read through the schemas of the version named in its header (see `../convert.ts`).
 */
import * as v0 from './v0.ts';
import * as v1 from './v1.ts';
import * as v2 from './v2.ts';
import * as v3 from './v3.ts';
import * as v4 from './v4.ts';
import * as v5 from './v5.ts';
import { VERSION } from './current.ts';

/** The version this build writes (the one `current.ts` re-exports). */
export const CURRENT_VERSION = VERSION;

export const formats = {
  0: { header: v0.header, event: v0.event },
  1: { header: v1.header, event: v1.event },
  2: { header: v2.header, event: v2.event },
  3: { header: v3.header, event: v3.event },
  4: { header: v4.header, event: v4.event },
  5: { header: v5.header, event: v5.event },
} as const;

export type FormatVersion = keyof typeof formats;
export type FormatSchemas = (typeof formats)[FormatVersion];

/** Every known version, oldest first. */
export const VERSIONS: readonly FormatVersion[] = [0, 1, 2, 3, 4, 5];

export function isKnownVersion(v: unknown): v is FormatVersion {
  return typeof v === 'number' && Object.hasOwn(formats, v);
}

export type AnyHeader = v0.Header | v1.Header | v2.Header | v3.Header | v4.Header | v5.Header;
export type AnyEvent = v0.Event | v1.Event | v2.Event | v3.Event | v4.Event | v5.Event;

export { v0, v1, v2, v3, v4, v5 };
