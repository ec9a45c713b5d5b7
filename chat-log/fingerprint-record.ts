/**
 * `fingerprints.json`: the shipped fingerprint and canonical structure of every format version, and
 * the in-version changes recorded since (each with a note). A shipped entry is never rewritten: it
 * is the baseline today's schemas are compared with (`compat-check.ts`).
 */
import { z } from 'zod';
import { compareStructures, type Change } from './compat-check.ts';
import {
  formatStructure,
  structureFingerprint,
  type FormatStructure,
  type CanonNode,
} from './fingerprint.ts';
import { formats, VERSIONS } from './format/index.ts';

export const ALGORITHM = 'sha256 of the canonical JSON (sorted keys) of {header, event} canonical structures';

const jsonNode = z.custom<CanonNode>(
  (v) =>
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    typeof (v as { type?: unknown }).type === 'string',
  'expected a canonical structure node',
);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

const recordSchema = z.strictObject({
  algorithm: z.string(),
  versions: z.record(
    z.string().regex(/^(0|[1-9][0-9]*)$/),
    z.strictObject({ fingerprint: sha256, structure: z.strictObject({ header: jsonNode, event: jsonNode }) }),
  ),
  allowedChanges: z.array(
    z.strictObject({
      version: z.number().int().nonnegative(),
      fingerprint: sha256,
      changes: z.array(z.string()),
      note: z.string(),
    }),
  ),
});

export type FingerprintRecord = z.infer<typeof recordSchema>;
export type AllowedChange = FingerprintRecord['allowedChanges'][number];

/** Parses the JSON content of `fingerprints.json`. */
export function parseRecord(raw: unknown): FingerprintRecord {
  return recordSchema.parse(raw);
}

/** Today's structure of every format version this build knows. */
export function currentStructures(): Map<number, FormatStructure> {
  return new Map(VERSIONS.map((v) => [v, formatStructure(formats[v])]));
}

export interface CheckResult {
  ok: boolean;
  /** One line per version: what matched, or what is wrong. */
  lines: string[];
}

function checkVersion(
  record: FingerprintRecord,
  v: number,
  current: FormatStructure,
  lines: string[],
): boolean {
  const entry = record.versions[String(v)];
  if (entry === undefined) {
    lines.push(`v${v}: not recorded in fingerprints.json (run: npx tsx scripts/fingerprints.ts --write)`);
    return false;
  }
  if (structureFingerprint(entry.structure) !== entry.fingerprint) {
    lines.push(`v${v}: the recorded fingerprint does not match the recorded structure`);
    return false;
  }
  const cmp = compareStructures(entry.structure, current);
  if (cmp.kind === 'same') {
    lines.push(`v${v}: same (${entry.fingerprint.slice(0, 12)})`);
    return true;
  }
  const detail = cmp.changes.map((c) => `  ${c.message}`);
  if (cmp.kind === 'breaking') {
    lines.push(
      `v${v}: breaking change to a shipped version:`,
      ...detail.filter((_, i) => !cmp.changes[i]?.allowed),
    );
    return false;
  }
  const fp = structureFingerprint(current);
  const recorded = record.allowedChanges.find((a) => a.version === v && a.fingerprint === fp);
  if (recorded === undefined || recorded.note.trim() === '') {
    lines.push(
      `v${v}: in-version change not recorded in allowedChanges with a note (run: npx tsx scripts/fingerprints.ts --write --note "...")`,
      ...detail,
    );
    return false;
  }
  lines.push(`v${v}: allowed change recorded (${recorded.note})`);
  return true;
}

/** Compares today's structures with the record: same passes, allowed only when recorded, breaking fails. */
export function checkRecord(record: FingerprintRecord, current: Map<number, FormatStructure>): CheckResult {
  const lines: string[] = [];
  let ok = true;
  for (const [v, structure] of current) ok = checkVersion(record, v, structure, lines) && ok;
  for (const key of Object.keys(record.versions)) {
    if (!current.has(Number(key))) {
      lines.push(`v${key}: recorded, but this build has no schema for it`);
      ok = false;
    }
  }
  return { ok, lines };
}

export type UpdateResult =
  { ok: true; record: FingerprintRecord; lines: string[] } | { ok: false; lines: string[] };

/**
 * The record to write: new versions are added, shipped baselines are kept, an allowed in-version
 * change is appended to `allowedChanges` (it needs `note`), and a breaking change is refused.
 */
export function updateRecord(
  previous: FingerprintRecord | undefined,
  current: Map<number, FormatStructure>,
  note?: string,
): UpdateResult {
  const record: FingerprintRecord = previous ?? { algorithm: ALGORITHM, versions: {}, allowedChanges: [] };
  const next: FingerprintRecord = {
    ...record,
    versions: { ...record.versions },
    allowedChanges: [...record.allowedChanges],
  };
  const lines: string[] = [];
  let ok = true;
  for (const [v, structure] of current) {
    const fp = structureFingerprint(structure);
    const entry = next.versions[String(v)];
    if (entry === undefined) {
      next.versions[String(v)] = { fingerprint: fp, structure };
      lines.push(`v${v}: recorded ${fp.slice(0, 12)}`);
      continue;
    }
    const cmp = compareStructures(entry.structure, structure);
    if (cmp.kind === 'same') continue;
    if (cmp.kind === 'breaking') {
      ok = false;
      lines.push(`v${v}: refused, breaking change to a shipped version:`, ...messages(cmp.changes, false));
      continue;
    }
    if (next.allowedChanges.some((a) => a.version === v && a.fingerprint === fp)) continue;
    if (note === undefined || note.trim() === '') {
      ok = false;
      lines.push(`v${v}: an allowed in-version change needs --note "<why>"`, ...messages(cmp.changes, true));
      continue;
    }
    next.allowedChanges.push({
      version: v,
      fingerprint: fp,
      changes: cmp.changes.map((c) => c.message),
      note,
    });
    lines.push(`v${v}: allowed change recorded`);
  }
  return ok ? { ok, record: next, lines } : { ok, lines };
}

function messages(changes: readonly Change[], allowed: boolean): string[] {
  return changes.filter((c) => c.allowed === allowed).map((c) => `  ${c.message}`);
}

/** The JSON text written to `fingerprints.json`. */
export function recordToText(record: FingerprintRecord): string {
  return `${JSON.stringify(record, null, 2)}\n`;
}
