/**
 * A fake Anthropic Messages provider that bills like Anthropic's prompt caching, for the savings
 * benchmark. It runs on loopback in the benchmark's process because its cache TTLs must follow the
 * same manual clock as the gateway's.
 *
 * The cacheable prefix is the sequence tools -> system -> messages, one unit per tool definition,
 * system block and message content block (Anthropic's order). A `cache_control` marker on a unit
 * ends a prefix: the prefix is looked up in the cache at that unit and up to 20 units before it
 * (Anthropic's lookback); the longest live entry found is read (0.1x) and its lifetime refreshed;
 * every marker after it writes its prefix (1.25x for 5 minutes, 2x for one hour, as Anthropic
 * prices them); what follows the last marker is base input (1x). Prefixes under 1,024 tokens are
 * not cached. Tokens are characters / 4; an image costs width x height / 750 tokens, as Anthropic
 * counts them. The `cache_control` markers themselves are not part of the prefix, so a marker moving
 * to a newer message does not change it. A request-level `cache_control` (Anthropic's automatic
 * caching) is a marker on the last unit of the request.
 */
import { createHash, type Hash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../lib/clock.ts';

type Obj = Record<string, unknown>;

const MIN_CACHEABLE_TOKENS = 1024;
const LOOKBACK_UNITS = 20;
const TTL_MS = { '5m': 5 * 60_000, '1h': 60 * 60_000 } as const;
const WRITE_PRICE = { '5m': 1.25, '1h': 2 } as const;
const READ_PRICE = 0.1;
/** An image whose size cannot be read counts as a 1,200 x 1,000 picture would. */
const UNKNOWN_IMAGE_TOKENS = 1600;

/** Anthropic's image cost: width x height / 750 tokens (PNG dimensions read from its header). */
function imageTokens(block: Obj): number {
  const source = block.source as { type?: string; data?: string } | undefined;
  if (source?.type !== 'base64' || typeof source.data !== 'string') return UNKNOWN_IMAGE_TOKENS;
  const head = Buffer.from(source.data.slice(0, 44), 'base64');
  if (head.length < 24 || head.toString('latin1', 1, 4) !== 'PNG') return UNKNOWN_IMAGE_TOKENS;
  return Math.ceil((head.readUInt32BE(16) * head.readUInt32BE(20)) / 750);
}

/** One unit of the cacheable prefix. */
export interface PrefixUnit {
  /** sha256 of every unit up to and including this one (the prefix's identity). */
  prefixHash: string;
  /** Tokens of the prefix up to and including this unit. */
  cumulativeTokens: number;
  /** The marker's TTL when the unit carries `cache_control`. */
  marker: '5m' | '1h' | undefined;
  /** The unit's own content (markers removed), to compare two requests' prefixes. */
  text: string;
}

export interface Billing {
  inputTokens: number;
  cacheWriteTokens: number;
  cacheReadTokens: number;
  /** Token-equivalents billed: input x1 + writes x1.25 (5m) or x2 (1h) + reads x0.1. */
  billed: number;
}

/** Where a request's prefix differs from the previous request's, and what that cost. */
export interface PrefixChange {
  /** Index of the first unit that differs. */
  index: number;
  /** Every unit of the previous request that differs in this one: index, old and new content. */
  units: Array<{ index: number; before: string; after: string; warm: boolean }>;
  /**
   * Tokens of the previous request's prefix that were in a live cache entry at or after the change
   * (so could have been read at 0.1x and now have to be written again); 0 when the cache was cold.
   */
  warmTokensLost: number;
}

export interface CachedRequest {
  at: number;
  billing: Billing;
  totalTokens: number;
  /** Position (unit index) of the cache entry read, -1 for none. */
  hitAt: number;
  /** Set when the prefix changed inside what the previous request sent (not a mere append). */
  change: PrefixChange | undefined;
}

interface CacheEntry {
  expiresAt: number;
  ttl: '5m' | '1h';
  /** Unit index the prefix ends at (for reporting). */
  position: number;
}

function chars(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + chars(v), 0);
  if (!value || typeof value !== 'object') return 0;
  const o = value as Obj;
  if (o.type === 'image') return imageTokens(o) * 4;
  if (o.type === 'text') return chars(o.text);
  if (o.type === 'tool_use') return String(o.name ?? '').length + JSON.stringify(o.input ?? {}).length;
  if (o.type === 'tool_result') return chars(o.content);
  return JSON.stringify(o).length;
}

function withoutMarker(unit: unknown): unknown {
  if (!unit || typeof unit !== 'object' || Array.isArray(unit)) return unit;
  const { cache_control: _marker, ...rest } = unit as Obj;
  return rest;
}

function markerOf(unit: unknown): '5m' | '1h' | undefined {
  if (!unit || typeof unit !== 'object') return undefined;
  const cc = (unit as Obj).cache_control as { ttl?: string } | undefined;
  if (!cc) return undefined;
  return cc.ttl === '1h' ? '1h' : '5m';
}

/** The request's cacheable prefix, unit by unit. */
export function prefixUnits(body: Obj): PrefixUnit[] {
  const raw: Array<{ tag: string; unit: unknown }> = [];
  for (const tool of (body.tools as unknown[] | undefined) ?? []) raw.push({ tag: 'tool', unit: tool });
  const system = body.system;
  if (typeof system === 'string') raw.push({ tag: 'system', unit: { type: 'text', text: system } });
  else if (Array.isArray(system)) for (const b of system) raw.push({ tag: 'system', unit: b });
  ((body.messages as Obj[] | undefined) ?? []).forEach((m, i) => {
    const content = m.content;
    const blocks =
      typeof content === 'string' ? [{ type: 'text', text: content }] : ((content as unknown[]) ?? []);
    blocks.forEach((b, j) => raw.push({ tag: `${i}:${String(m.role)}:${j}`, unit: b }));
  });
  const hash: Hash = createHash('sha256');
  let tokens = 0;
  return raw.map(({ tag, unit }) => {
    const text = JSON.stringify(withoutMarker(unit));
    hash.update(`${tag}\u0000${text}\u0001`);
    tokens += chars(unit) / 4;
    return { prefixHash: hash.copy().digest('hex'), cumulativeTokens: tokens, marker: markerOf(unit), text };
  });
}

export class CachingFakeAnthropic {
  readonly requests: CachedRequest[] = [];
  private readonly cache = new Map<string, CacheEntry>();
  private lastUnits: PrefixUnit[] = [];
  private server: Server | undefined;
  /** The assistant content the next answer carries (the session's scripted model turn). */
  nextReply: unknown[] = [{ type: 'text', text: 'OK.' }];
  url = '';

  constructor(private readonly clock: Clock) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Obj;
        const { billing } = this.bill(body);
        const answer = JSON.stringify({
          id: `msg_${this.requests.length}`,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: this.nextReply,
          stop_reason: this.nextReply.some((b) => (b as Obj).type === 'tool_use') ? 'tool_use' : 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: Math.round(billing.inputTokens),
            cache_creation_input_tokens: Math.round(billing.cacheWriteTokens),
            cache_read_input_tokens: Math.round(billing.cacheReadTokens),
            output_tokens: 50,
          },
        });
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(answer),
        });
        res.end(answer);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** True when a cache entry for this prefix is alive now. */
  isWarm(prefixHash: string): boolean {
    const e = this.cache.get(prefixHash);
    return e !== undefined && e.expiresAt >= this.clock.now();
  }

  /** Compares with the previous request's prefix, before the cache is updated. */
  private change(units: readonly PrefixUnit[]): PrefixChange | undefined {
    const prev = this.lastUnits;
    let d = 0;
    while (d < prev.length && d < units.length && prev[d]!.prefixHash === units[d]!.prefixHash) d++;
    if (d >= prev.length) return undefined; // the previous prefix is intact (appended to, or the same)
    let warmEnd = -1;
    for (let i = prev.length - 1; i >= d; i--) {
      if (this.isWarm(prev[i]!.prefixHash)) {
        warmEnd = i;
        break;
      }
    }
    const base = d > 0 ? prev[d - 1]!.cumulativeTokens : 0;
    const changed: PrefixChange['units'] = [];
    for (let i = d; i < prev.length; i++) {
      const after = units[i]?.text ?? '';
      if (prev[i]!.text !== after)
        changed.push({ index: i, before: prev[i]!.text, after, warm: i <= warmEnd });
    }
    return {
      index: d,
      units: changed,
      warmTokensLost: warmEnd >= 0 ? prev[warmEnd]!.cumulativeTokens - base : 0,
    };
  }

  /** Bills one request against the cache and updates the cache, as Anthropic would. */
  bill(body: Obj): CachedRequest {
    const now = this.clock.now();
    const units = prefixUnits(body);
    const change = this.change(units);
    const total = units.length ? units[units.length - 1]!.cumulativeTokens : 0;
    const markers = units.flatMap((u, i) => (u.marker ? [i] : []));
    // Automatic caching: the request-level marker goes on the last block.
    const automatic = markerOf({ cache_control: body.cache_control });
    const lastUnit = units[units.length - 1];
    if (automatic && lastUnit && !lastUnit.marker) {
      units[units.length - 1] = { ...lastUnit, marker: automatic };
      markers.push(units.length - 1);
    }
    // The longest live prefix at a marker or up to 20 units before one.
    let hitAt = -1;
    for (const m of [...markers].reverse()) {
      for (let j = m; j >= Math.max(0, m - LOOKBACK_UNITS) && j > hitAt; j--) {
        if (this.isWarm(units[j]!.prefixHash)) {
          hitAt = j;
          break;
        }
      }
      if (hitAt >= 0) break;
    }
    const read = hitAt >= 0 ? units[hitAt]!.cumulativeTokens : 0;
    if (hitAt >= 0) {
      const e = this.cache.get(units[hitAt]!.prefixHash)!;
      e.expiresAt = now + TTL_MS[e.ttl];
    }
    let written = 0;
    let billedWrites = 0;
    let cachedTo = read;
    for (const m of markers) {
      if (m <= hitAt) continue;
      const u = units[m]!;
      if (u.cumulativeTokens < MIN_CACHEABLE_TOKENS) continue;
      const ttl = u.marker!;
      const segment = u.cumulativeTokens - cachedTo;
      written += segment;
      billedWrites += segment * WRITE_PRICE[ttl];
      cachedTo = u.cumulativeTokens;
      const existing = this.cache.get(u.prefixHash);
      this.cache.set(u.prefixHash, {
        expiresAt: Math.max(existing?.expiresAt ?? 0, now + TTL_MS[ttl]),
        ttl,
        position: m,
      });
    }
    const input = total - cachedTo;
    const billing: Billing = {
      inputTokens: input,
      cacheWriteTokens: written,
      cacheReadTokens: read,
      billed: input + billedWrites + read * READ_PRICE,
    };
    const rec: CachedRequest = { at: now, billing, totalTokens: total, hitAt, change };
    this.requests.push(rec);
    this.lastUnits = units;
    return rec;
  }
}
