/**
 * Schema fingerprints (seed 002, "How two versions are compared"): a zod schema becomes a canonical
 * structure (plain JSON) and that structure's SHA-256.
 *
 * Counted: property names, value types and their constraints, optionality, tuple element order,
 * union/enum variants and literal values. Not counted: descriptions and metadata (zod keeps them in
 * a registry, outside the schema), where a schema is declared and under which name, `readonly`
 * wrappers, brands (type-level only), the order of object fields, union variants and intersection
 * parts (all sorted), and whether a repeated sub-type is shared or written out again (everything is
 * inlined). A recursive type refers back to its enclosing node as `{type: 'recursive', up: n}`, `n`
 * counting structural nodes upwards, which is the same however the recursion is declared.
 */
import type { z } from 'zod';
import { canonicalJson } from './canonical-json.ts';
import { sha256Hex } from '../lib/sha256.ts';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** One node of a canonical structure; `type` names the zod kind (string, object, union, ...). */
export type CanonNode = { type: string } & { [key: string]: Json };

/** A property of a canonical object: optional or not, and its value's structure. */
export interface CanonProperty {
  optional: boolean;
  schema: CanonNode;
}

/** The canonical structure of one format version: its header and its event schema. */
export interface FormatStructure {
  header: CanonNode;
  event: CanonNode;
}

type AnySchema = z.core.$ZodType;

interface Ctx {
  stack: Map<AnySchema, number>;
  depth: number;
}

const IGNORED_CHECK_KEYS = new Set(['error', 'abort', 'when', 'fn', 'params', 'message']);

function canonValue(v: unknown): Json | undefined {
  if (v instanceof RegExp) return `/${v.source}/${v.flags}`;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (typeof v === 'bigint') return { bigint: String(v) };
  if (v instanceof Date) return { date: v.toISOString() };
  return undefined;
}

function sortJson(items: Json[]): Json[] {
  const byText = new Map(items.map((i) => [canonicalJson(i), i] as const));
  return [...byText.keys()].sort().map((k) => byText.get(k) ?? null);
}

function canonChecks(checks: readonly z.core.$ZodCheck[] | undefined): Json[] {
  const out: Json[] = [];
  for (const check of checks ?? []) {
    const def = check._zod.def as unknown as Record<string, unknown>;
    const entry: Record<string, Json> = {};
    for (const [k, v] of Object.entries(def)) {
      if (IGNORED_CHECK_KEYS.has(k)) continue;
      const c = canonValue(v);
      if (c !== undefined) entry[k] = c;
    }
    out.push(entry);
  }
  return sortJson(out);
}

function withChecks(type: string, checks: readonly z.core.$ZodCheck[] | undefined): CanonNode {
  const c = canonChecks(checks);
  return c.length === 0 ? { type } : { type, checks: c };
}

/** Strips `readonly` and property-level `optional` wrappers; reports whether any was optional. */
function property(schema: AnySchema, ctx: Ctx): CanonProperty {
  let optional = false;
  let s = schema;
  for (;;) {
    const def = (s as z.core.$ZodTypes)._zod.def;
    if (def.type === 'optional') {
      optional = true;
      s = def.innerType;
    } else if (def.type === 'readonly') {
      s = def.innerType;
    } else {
      break;
    }
  }
  return { optional, schema: canon(s, ctx) };
}

function flattenIntersection(schema: AnySchema, out: AnySchema[]): AnySchema[] {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  if (def.type === 'intersection') {
    flattenIntersection(def.left, out);
    flattenIntersection(def.right, out);
  } else {
    out.push(schema);
  }
  return out;
}

function node(schema: AnySchema, ctx: Ctx): CanonNode {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case 'string':
    case 'number':
    case 'bigint':
    case 'date':
    case 'boolean':
      return withChecks(def.type, def.checks);
    case 'null':
    case 'undefined':
    case 'void':
    case 'nan':
    case 'symbol':
    case 'any':
    case 'unknown':
    case 'never':
      return { type: def.type };
    case 'literal':
      return {
        type: 'literal',
        values: sortJson(def.values.map((v) => canonValue(v) ?? { undefined: true })),
      };
    case 'enum':
      return { type: 'enum', values: sortJson(Object.values(def.entries)) };
    case 'object': {
      const properties: Record<string, Json> = {};
      for (const key of Object.keys(def.shape).sort()) {
        const field = def.shape[key];
        if (field === undefined) continue;
        const p = property(field, ctx);
        properties[key] = { optional: p.optional, schema: p.schema };
      }
      // unknown keys: refused (never), kept (a schema) or stripped (no catchall)
      const rest: Json = def.catchall === undefined ? 'strip' : canon(def.catchall, ctx);
      return { type: 'object', properties, rest };
    }
    case 'array':
      return { ...withChecks('array', def.checks), element: canon(def.element, ctx) };
    case 'tuple':
      return {
        type: 'tuple',
        items: def.items.map((i) => canon(i, ctx)),
        rest: def.rest === null ? null : canon(def.rest, ctx),
      };
    case 'union':
      return { type: 'union', options: sortJson(def.options.map((o) => canon(o, ctx))) };
    case 'intersection':
      return {
        type: 'intersection',
        parts: sortJson(flattenIntersection(schema, []).map((p) => canon(p, ctx))),
      };
    case 'record':
      return { type: 'record', key: canon(def.keyType, ctx), value: canon(def.valueType, ctx) };
    case 'map':
      return { type: 'map', key: canon(def.keyType, ctx), value: canon(def.valueType, ctx) };
    case 'set':
      return { ...withChecks('set', def.checks), value: canon(def.valueType, ctx) };
    case 'optional':
    case 'nullable':
    case 'nonoptional':
      return { type: def.type, inner: canon(def.innerType, ctx) };
    case 'default':
    case 'prefault': {
      const value = canonValue(def.defaultValue) ?? canonicalJson(def.defaultValue);
      return { type: def.type, inner: canon(def.innerType, ctx), value };
    }
    case 'pipe':
      return { type: 'pipe', in: canon(def.in, ctx), out: canon(def.out, ctx) };
    default:
      throw new Error(`fingerprint: zod schema kind "${def.type}" is not supported in a log format`);
  }
}

function canon(schema: AnySchema, ctx: Ctx): CanonNode {
  const seen = ctx.stack.get(schema);
  if (seen !== undefined) return { type: 'recursive', up: ctx.depth - seen };
  const def = (schema as z.core.$ZodTypes)._zod.def;
  ctx.stack.set(schema, ctx.depth);
  try {
    // transparent wrappers: not counted, and not a level of their own
    if (def.type === 'readonly') return canon(def.innerType, ctx);
    if (def.type === 'lazy') return canon((schema as z.core.$ZodLazy)._zod.innerType, ctx);
    ctx.depth++;
    try {
      return node(schema, ctx);
    } finally {
      ctx.depth--;
    }
  } finally {
    ctx.stack.delete(schema);
  }
}

/** The canonical structure of a zod schema (plain JSON, keys and variants sorted). */
export function canonicalStructure(schema: AnySchema): CanonNode {
  return canon(schema, { stack: new Map(), depth: 0 });
}

/** SHA-256 (hex) of any canonical structure's canonical JSON. */
export function structureFingerprint(structure: FormatStructure | CanonNode): string {
  return sha256Hex(canonicalJson(structure));
}

/** SHA-256 (hex) of a schema's canonical structure. */
export function fingerprint(schema: AnySchema): string {
  return structureFingerprint(canonicalStructure(schema));
}

/** The canonical structure of a format version's header and event schemas. */
export function formatStructure(schemas: { header: AnySchema; event: AnySchema }): FormatStructure {
  return { header: canonicalStructure(schemas.header), event: canonicalStructure(schemas.event) };
}
