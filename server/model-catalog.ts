/**
 * The models the gateway serves (SPEC section 2): each provider is asked for its list
 * (`GET {baseUrl}/models` for OpenAI format, `GET {baseUrl}/v1/models` for Anthropic) with its own
 * key or, in pass-through mode, the client's credential; the answers are cached briefly per
 * provider and credential, merged in provider order (an id listed twice keeps its first place),
 * and narrowed by each provider's `models` globs. A provider that cannot be asked (unreachable, a
 * refusal, an answer that is not a model list) contributes the literal ids of its globs, never `*`.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderConfig } from '../config/config.ts';
import { globMatch } from '../lib/glob.ts';
import { sha256Hex } from '../lib/sha256.ts';
import {
  MODEL_LIST_ROUTE,
  modelListRequest,
  parseModelList,
  type ListedModel,
} from '../providers/model-list.ts';
import { FORMATS } from '../providers/registry.ts';
import { buildUpstreamUrl } from '../providers/upstream-url.ts';
import type { AppContext } from './app-context.ts';

/** How long a provider's answer is reused. */
export const MODELS_TTL_MS = 60_000;
/** How long a provider that could not be asked is left alone before it is asked again. */
export const MODELS_FAILURE_TTL_MS = 10_000;
/** Lists kept at once (providers x credentials); the oldest goes first. */
const MAX_ENTRIES = 1_000;
/** The longest the gateway waits for a provider's list. */
const ASK_TIMEOUT_MS = 10_000;
/** Pages of an Anthropic list followed at most. */
const MAX_PAGES = 10;

/** A model the gateway serves and the provider serving it. */
export interface CatalogEntry {
  model: ListedModel;
  owner: string;
}

interface Cached {
  expires: number;
  models: Promise<ListedModel[]>;
}

/** The ids a provider serves without asking: its globs that match only themselves. */
export function literalIds(provider: ProviderConfig): ListedModel[] {
  return provider.models.filter((g) => !/[*?]/.test(g)).map((id) => ({ id, created: 0 }));
}

export class ModelCatalog {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly app: AppContext) {}

  /** Every model served, in provider order, for a client sending `headers`. */
  async list(headers: IncomingHttpHeaders): Promise<CatalogEntry[]> {
    const providers = this.app.registry.all();
    const lists = await Promise.all(providers.map((p) => this.providerModels(p, headers)));
    const seen = new Set<string>();
    const out: CatalogEntry[] = [];
    providers.forEach((provider, i) => {
      for (const model of lists[i]!) {
        if (seen.has(model.id) || !provider.models.some((g) => globMatch(g, model.id))) continue;
        seen.add(model.id);
        out.push({ model, owner: provider.name });
      }
    });
    return out;
  }

  /**
   * The credential headers the gateway asks `provider` with: its key, or the client's own; undefined
   * when it is not to be asked. A client's own key goes only to providers of the client's format (an
   * Anthropic client names `anthropic-version`): an OpenAI key never goes to an Anthropic-format
   * provider, nor an Anthropic token to an OpenAI-format one, for a listing the client did not aim
   * at them (SPEC section 14: a gateway holding a user's key never turns it against its owner).
   */
  private credential(
    provider: ProviderConfig,
    headers: IncomingHttpHeaders,
  ): Record<string, string> | undefined {
    const adapter = FORMATS[provider.format];
    if (provider.apiKey) return adapter.authHeaders(provider.apiKey);
    if (!this.app.passThroughCredentials) return {};
    const clientFormat = headers['anthropic-version'] === undefined ? 'openai' : 'anthropic';
    if (provider.format !== clientFormat) return undefined;
    const out: Record<string, string> = {};
    for (const name of adapter.credentialHeaders) {
      const v = headers[name];
      if (typeof v === 'string') out[name] = v;
    }
    return out;
  }

  private providerModels(provider: ProviderConfig, headers: IncomingHttpHeaders): Promise<ListedModel[]> {
    const credential = this.credential(provider, headers);
    if (credential === undefined) return Promise.resolve(literalIds(provider));
    const key = `${provider.name}\n${sha256Hex(JSON.stringify(credential))}`;
    const now = this.app.clock.now();
    const hit = this.cache.get(key);
    if (hit && hit.expires > now) return hit.models;
    const entry: Cached = { expires: now + MODELS_TTL_MS, models: Promise.resolve([]) };
    entry.models = this.ask(provider, credential).then(
      (models) => models,
      (err: unknown) => {
        entry.expires = this.app.clock.now() + MODELS_FAILURE_TTL_MS;
        // On an open gateway each client credential is asked with: one line per provider and interval.
        this.app.limitedLog.write({
          level: 'warn',
          kind: 'models-unlisted',
          source: { provider: provider.name },
          fields: { error: err instanceof Error ? err.message : String(err) },
          msg: 'could not list the provider’s models; listing the literal ids of its globs',
        });
        return literalIds(provider);
      },
    );
    this.cache.delete(key);
    this.cache.set(key, entry);
    if (this.cache.size > MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    return entry.models;
  }

  /** Asks `provider` for its whole list (following an Anthropic list's pages). */
  private async ask(provider: ProviderConfig, credential: Record<string, string>): Promise<ListedModel[]> {
    const adapter = FORMATS[provider.format];
    const models: ListedModel[] = [];
    let afterId: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const request = modelListRequest(provider.format, afterId);
      const url = buildUpstreamUrl(provider.baseUrl, adapter.apiPath(MODEL_LIST_ROUTE), request.query);
      const res = await this.app.upstream.send({
        url,
        method: 'GET',
        headers: { ...request.headers, ...credential },
        signal: AbortSignal.timeout(Math.min(ASK_TIMEOUT_MS, this.app.config.timeouts.firstByteMs)),
      });
      const text = await res.body.text();
      if (res.status !== 200) throw new Error(`the provider answered ${res.status}: ${text.slice(0, 200)}`);
      const parsed = parseModelList(provider.format, JSON.parse(text));
      models.push(...parsed.models);
      if (parsed.nextAfterId === undefined) break;
      afterId = parsed.nextAfterId;
    }
    return models;
  }
}
