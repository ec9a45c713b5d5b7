/** The benchmark report: readable tables on stdout and one JSON document in .bench-out/report.json. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export type Cell = string | number;

export interface Table {
  title: string;
  headers: string[];
  rows: Cell[][];
}

export interface TargetCheck {
  name: string;
  target: string;
  /** The measured value, in the unit the target names. */
  measured: string;
  met: boolean;
  /** How far off, when missed (e.g. "+0.42 ms", "x1.8"). */
  missedBy?: string;
}

export interface SectionReport {
  name: string;
  /** Seconds the section took. */
  seconds: number;
  tables: Table[];
  targets: TargetCheck[];
  notes: string[];
  /** Every figure behind the tables (medians, spreads, raw samples). */
  data: unknown;
  skipped?: string;
}

export function formatTable(t: Table): string {
  const cells = [t.headers, ...t.rows.map((r) => r.map((c) => (typeof c === 'number' ? fmtNum(c) : c)))];
  const widths = t.headers.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: Cell[]) =>
    r
      .map((c, i) => {
        const s = String(c ?? '');
        return i === 0 ? s.padEnd(widths[i]!) : s.padStart(widths[i]!);
      })
      .join('  ');
  return [
    `${t.title}`,
    line(cells[0]!),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...cells.slice(1).map(line),
  ].join('\n');
}

/** Numbers with sensible precision for a table cell. */
export function fmtNum(x: number): string {
  if (!Number.isFinite(x) || Number.isInteger(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toString();
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toFixed(3);
}

/** "12.3 ±4%": a median with the spread of its rounds. */
export function withSpread(median: number, spread: number, digits?: number): string {
  const m = digits === undefined ? fmtNum(median) : median.toFixed(digits);
  return `${m} ±${Math.round((spread * 100) / 2)}%`;
}

export function formatTargets(targets: readonly TargetCheck[]): string {
  if (targets.length === 0) return '';
  const rows = targets.map((t) => [
    t.met ? 'met' : 'MISSED',
    t.name,
    t.target,
    t.measured,
    t.met ? '' : (t.missedBy ?? ''),
  ]);
  return formatTable({ title: 'Targets', headers: ['', 'what', 'target', 'measured', 'missed by'], rows });
}

export function printSection(s: SectionReport): void {
  const out: string[] = [`\n=== ${s.name} (${s.seconds.toFixed(0)} s) ===`];
  if (s.skipped) out.push(`skipped: ${s.skipped}`);
  for (const t of s.tables) out.push('', formatTable(t));
  if (s.targets.length) out.push('', formatTargets(s.targets));
  for (const n of s.notes) out.push(`note: ${n}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

export function writeJson(path: string, value: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}
