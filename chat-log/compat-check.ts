/**
 * Compares a shipped format structure with today's (seed 002, "Changes that stay in the same
 * version"). Only three changes may stay in a released version:
 *
 * (a) an optional property added inside an event body (anywhere below `event`, never the header);
 * (b) a new event payload version: a field whose schema is a union of objects that each carry a
 *     `payloadVersion` literal number (or one such object) gains a variant whose number is higher
 *     than every earlier one, and every earlier variant is kept exactly;
 * (c) a source kind added only as an attribution: a new value of `message.source.kind`.
 *
 * Anything else is breaking and needs a new format version.
 */
import { canonicalJson } from './canonical-json.ts';
import type { CanonNode, CanonProperty, FormatStructure, Json } from './fingerprint.ts';
import { CURRENT_VERSION } from './format/index.ts';

export type ChangeKind =
  | 'optional-property-added'
  | 'payload-version-added'
  | 'source-kind-added'
  | 'property-added'
  | 'property-removed'
  | 'optionality-changed'
  | 'type-changed'
  | 'constraints-changed'
  | 'literal-changed'
  | 'enum-changed'
  | 'variants-changed'
  | 'payload-version-changed'
  | 'tuple-changed'
  | 'index-signature-changed';

/** One difference between two structures. `path` names the place, e.g. `event request.settings`. */
export interface Change {
  path: string;
  kind: ChangeKind;
  allowed: boolean;
  message: string;
}

export type Comparison =
  { kind: 'same' } | { kind: 'allowed'; changes: Change[] } | { kind: 'breaking'; changes: Change[] };

/** Where the attribution-only source kind lives. */
export const SOURCE_KIND_PATH = 'event message.source.kind';
/** The member that numbers the variants of a versioned payload. */
export const PAYLOAD_VERSION_KEY = 'payloadVersion';

interface Ctx {
  inEvent: boolean;
  next: number;
  out: Change[];
}

const same = (a: Json, b: Json): boolean => canonicalJson(a) === canonicalJson(b);

function isNode(j: Json | undefined): j is CanonNode {
  return typeof j === 'object' && j !== null && !Array.isArray(j) && typeof j.type === 'string';
}

function node(j: Json | undefined): CanonNode {
  if (!isNode(j))
    throw new Error(`compat-check: not a canonical structure node: ${canonicalJson(j ?? null)}`);
  return j;
}

function nodes(j: Json | undefined): CanonNode[] {
  return Array.isArray(j) ? j.map((x) => node(x)) : [];
}

function values(j: Json | undefined): Json[] {
  return Array.isArray(j) ? j : [];
}

function properties(n: CanonNode): Record<string, CanonProperty> {
  const out: Record<string, CanonProperty> = {};
  const props = n.properties;
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return out;
  for (const [k, v] of Object.entries(props)) {
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      out[k] = { optional: v.optional === true, schema: node(v.schema) };
    }
  }
  return out;
}

function describe(n: CanonNode): string {
  if (n.type === 'literal' || n.type === 'enum')
    return `${n.type} ${values(n.values)
      .map((v) => JSON.stringify(v))
      .join(' | ')}`;
  return n.type;
}

function record(ctx: Ctx, path: string, kind: ChangeKind, detail: string, allowed = false): void {
  const message = allowed
    ? `${path}: ${detail}: allowed within the version once recorded`
    : `${path}: ${detail}: this change needs a new format version (v${ctx.next})`;
  ctx.out.push({ path, kind, allowed, message });
}

/** The single literal value of a required property, if it has one. */
function literalOf(n: CanonNode, key: string): Json | undefined {
  const p = properties(n)[key];
  if (p === undefined || p.optional || p.schema.type !== 'literal') return undefined;
  const vs = values(p.schema.values);
  return vs.length === 1 ? vs[0] : undefined;
}

/** A discriminator key: every option an object with a distinct single literal under it. */
function discriminator(options: CanonNode[]): string | undefined {
  if (options.length === 0 || options.some((o) => o.type !== 'object')) return undefined;
  const first = options[0];
  if (first === undefined) return undefined;
  const candidates = Object.keys(properties(first)).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : 1));
  return candidates.find((key) => {
    const seen = new Set<string>();
    for (const o of options) {
      const v = literalOf(o, key);
      if (v === undefined || seen.has(canonicalJson(v))) return false;
      seen.add(canonicalJson(v));
    }
    return true;
  });
}

function rank(key: string): number {
  return key === 'type' ? 0 : key === 'kind' ? 1 : 2;
}

/** Variants keyed by payload version, when `n` follows the versioned-payload convention. */
function payloadVariants(n: CanonNode): Map<number, CanonNode> | undefined {
  const options = n.type === 'union' ? nodes(n.options) : n.type === 'object' ? [n] : [];
  if (options.length === 0) return undefined;
  const out = new Map<number, CanonNode>();
  for (const o of options) {
    const v = o.type === 'object' ? literalOf(o, PAYLOAD_VERSION_KEY) : undefined;
    if (typeof v !== 'number' || out.has(v)) return undefined;
    out.set(v, o);
  }
  return out;
}

function comparePayloads(a: Map<number, CanonNode>, b: Map<number, CanonNode>, path: string, ctx: Ctx): void {
  const latest = Math.max(...a.keys());
  for (const [v, variant] of a) {
    const now = b.get(v);
    // an earlier variant must be kept; inside it, only what any event body allows (an optional property)
    if (now === undefined) record(ctx, path, 'payload-version-changed', `payload version ${v} was removed`);
    else diff(variant, now, `${path}[${PAYLOAD_VERSION_KEY}=${v}]`, ctx);
  }
  for (const v of [...b.keys()].sort((x, y) => x - y)) {
    if (a.has(v)) continue;
    if (ctx.inEvent && v > latest) {
      record(ctx, path, 'payload-version-added', `payload version ${v} added after ${latest}`, true);
    } else {
      const why = ctx.inEvent ? `not higher than ${latest}` : 'outside an event body';
      record(ctx, path, 'payload-version-changed', `payload version ${v} added ${why}`);
    }
  }
}

function compareUnion(a: CanonNode, b: CanonNode, path: string, ctx: Ctx): void {
  const ao = nodes(a.options);
  const bo = nodes(b.options);
  const key = discriminator(ao);
  if (key === undefined || discriminator(bo) !== key) {
    const removed = ao.filter((o) => !bo.some((p) => same(o, p))).length;
    const added = bo.filter((o) => !ao.some((p) => same(o, p))).length;
    record(ctx, path, 'variants-changed', `union variants changed (${added} added, ${removed} removed)`);
    return;
  }
  const byValue = (opts: CanonNode[]) =>
    new Map(opts.map((o) => [canonicalJson(literalOf(o, key) ?? null), o]));
  const am = byValue(ao);
  const bm = byValue(bo);
  const name = (v: string) =>
    path === 'event' && key === 'type'
      ? `event ${JSON.parse(v) as string}`
      : `${path}[${key}=${JSON.parse(v) as string}]`;
  for (const [v, o] of am) {
    const now = bm.get(v);
    if (now === undefined) record(ctx, path, 'variants-changed', `variant ${key} ${v} was removed`);
    else diff(o, now, name(v), ctx);
  }
  for (const v of bm.keys()) {
    if (!am.has(v)) record(ctx, path, 'variants-changed', `variant ${key} ${v} was added`);
  }
}

function compareObject(a: CanonNode, b: CanonNode, path: string, ctx: Ctx): void {
  const ap = properties(a);
  const bp = properties(b);
  for (const [k, p] of Object.entries(ap)) {
    const q = bp[k];
    if (q === undefined) {
      record(ctx, path, 'property-removed', `property "${k}" was removed`);
      continue;
    }
    if (p.optional !== q.optional) {
      record(
        ctx,
        path,
        'optionality-changed',
        `property "${k}" became ${q.optional ? 'optional' : 'required'}`,
      );
    }
    diff(p.schema, q.schema, `${path}.${k}`, ctx);
  }
  for (const [k, q] of Object.entries(bp)) {
    if (ap[k] !== undefined) continue;
    if (!q.optional) record(ctx, path, 'property-added', `required property "${k}" was added`);
    else if (ctx.inEvent)
      record(ctx, path, 'optional-property-added', `optional property "${k}" was added`, true);
    else record(ctx, path, 'property-added', `optional property "${k}" was added outside an event body`);
  }
  if (!same(a.rest ?? null, b.rest ?? null)) {
    record(ctx, path, 'index-signature-changed', 'unknown-key policy (index signature) changed');
  }
}

function compareEnum(a: CanonNode, b: CanonNode, path: string, ctx: Ctx): void {
  const av = values(a.values).map((v) => canonicalJson(v));
  const bv = values(b.values).map((v) => canonicalJson(v));
  const added = bv.filter((v) => !av.includes(v));
  const removed = av.filter((v) => !bv.includes(v));
  if (removed.length > 0) record(ctx, path, 'enum-changed', `enum value(s) ${removed.join(', ')} removed`);
  if (added.length === 0) return;
  if (path === SOURCE_KIND_PATH) {
    record(ctx, path, 'source-kind-added', `source kind(s) ${added.join(', ')} added as attribution`, true);
  } else {
    record(ctx, path, 'enum-changed', `enum value(s) ${added.join(', ')} added`);
  }
}

function diff(a: CanonNode, b: CanonNode, path: string, ctx: Ctx): void {
  if (same(a, b)) return;
  const versioned = ctx.inEvent && (a.type === 'union' || b.type === 'union');
  const pa = versioned ? payloadVariants(a) : undefined;
  const pb = versioned ? payloadVariants(b) : undefined;
  if (pa !== undefined && pb !== undefined) return comparePayloads(pa, pb, path, ctx);
  if (a.type !== b.type) {
    return record(ctx, path, 'type-changed', `type changed from ${describe(a)} to ${describe(b)}`);
  }
  switch (a.type) {
    case 'object':
      return compareObject(a, b, path, ctx);
    case 'union':
      return compareUnion(a, b, path, ctx);
    case 'enum':
      return compareEnum(a, b, path, ctx);
    case 'literal':
      return record(ctx, path, 'literal-changed', `${describe(a)} changed to ${describe(b)}`);
    case 'array':
    case 'set':
      if (!same(a.checks ?? null, b.checks ?? null))
        record(ctx, path, 'constraints-changed', 'constraints changed');
      return diff(node(a.element ?? a.value), node(b.element ?? b.value), `${path}[]`, ctx);
    case 'record':
    case 'map':
      diff(node(a.key), node(b.key), `${path}{key}`, ctx);
      return diff(node(a.value), node(b.value), `${path}{}`, ctx);
    case 'tuple': {
      const ai = nodes(a.items);
      const bi = nodes(b.items);
      if (ai.length !== bi.length || !same(a.rest ?? null, b.rest ?? null)) {
        return record(ctx, path, 'tuple-changed', `tuple length changed from ${ai.length} to ${bi.length}`);
      }
      ai.forEach((x, i) => diff(x, node(bi[i]), `${path}[${i}]`, ctx));
      return;
    }
    case 'optional':
    case 'nullable':
    case 'nonoptional':
      return diff(node(a.inner), node(b.inner), path, ctx);
    case 'string':
    case 'number':
    case 'bigint':
    case 'date':
    case 'boolean':
      return record(ctx, path, 'constraints-changed', `constraints of ${a.type} changed`);
    default:
      return record(ctx, path, 'type-changed', `${a.type} definition changed`);
  }
}

/**
 * Classifies the change from a shipped format structure to the current one. Breaking changes say
 * they need a new format version, `nextVersion` (by default the one after the current version).
 */
export function compareStructures(
  shipped: FormatStructure,
  current: FormatStructure,
  nextVersion: number = CURRENT_VERSION + 1,
): Comparison {
  const out: Change[] = [];
  diff(shipped.header, current.header, 'header', { inEvent: false, next: nextVersion, out });
  diff(shipped.event, current.event, 'event', { inEvent: true, next: nextVersion, out });
  if (out.length === 0) return { kind: 'same' };
  return out.every((c) => c.allowed) ? { kind: 'allowed', changes: out } : { kind: 'breaking', changes: out };
}
