/**
 * Model lists in the two shapes providers and clients speak: OpenAI's
 * `{object:'list', data:[{id, object:'model', created, owned_by}]}` and Anthropic's
 * `{data:[{type:'model', id, display_name, created_at}], has_more, first_id, last_id}` (paged by
 * `limit`, `after_id`, `before_id`). Provider answers are parsed here (zod, leniently: only `id` is
 * required of a model) into one neutral form, and that form is written back in the caller's shape.
 * @see https://platform.openai.com/docs/api-reference/models/list
 * @see https://docs.anthropic.com/en/api/models-list
 */
import { z } from 'zod';
import type { ProviderConfig } from '../config/config.ts';

/** The shape of a model list: a provider's format, or the caller's. */
export type ModelListShape = ProviderConfig['format'];

/** One model, whichever shape it came in. */
export interface ListedModel {
  id: string;
  /** Unix seconds (OpenAI `created`, Anthropic `created_at`); 0 when unknown. */
  created: number;
  /** OpenAI `owned_by`, when the provider said. */
  ownedBy?: string;
  /** Anthropic `display_name`, when the provider said. */
  displayName?: string;
}

/** One page of a provider's list, and the cursor of the next page when there is one. */
export interface ModelListPage {
  models: ListedModel[];
  nextAfterId?: string;
}

/** The provider path of the model list (before the format's own `apiPath`). */
export const MODEL_LIST_ROUTE = '/v1/models';

/** The Anthropic API version the gateway states when it lists models itself. */
const ANTHROPIC_VERSION = '2023-06-01';

/** The largest page Anthropic gives. */
export const ANTHROPIC_MAX_PAGE = 1000;

const openaiList = z.looseObject({
  data: z.array(
    z.looseObject({
      id: z.string().min(1),
      created: z.number().optional().catch(undefined),
      owned_by: z.string().optional().catch(undefined),
    }),
  ),
});

const anthropicList = z.looseObject({
  data: z.array(
    z.looseObject({
      id: z.string().min(1),
      display_name: z.string().optional().catch(undefined),
      created_at: z.string().optional().catch(undefined),
    }),
  ),
  has_more: z.boolean().optional().catch(undefined),
  last_id: z.string().nullish().catch(undefined),
});

function unixSeconds(iso: string | undefined): number {
  const ms = iso === undefined ? NaN : Date.parse(iso);
  return Number.isFinite(ms) ? Math.floor(ms / 1000) : 0;
}

function isoOf(created: number): string {
  return new Date(created * 1000).toISOString().replace('.000Z', 'Z');
}

/** What the gateway sends when it asks a provider of `shape` for its models, besides its credential. */
export function modelListRequest(
  shape: ModelListShape,
  afterId?: string,
): { headers: Record<string, string>; query: Record<string, string> } {
  const headers: Record<string, string> = { accept: 'application/json', 'accept-encoding': 'identity' };
  if (shape === 'openai') return { headers, query: {} };
  return {
    headers: { ...headers, 'anthropic-version': ANTHROPIC_VERSION },
    query: { limit: String(ANTHROPIC_MAX_PAGE), ...(afterId !== undefined && { after_id: afterId }) },
  };
}

/**
 * Reads a provider's model list answer; throws (with the field) when it is not a model list. Ids
 * are kept in the provider's order.
 */
export function parseModelList(shape: ModelListShape, json: unknown): ModelListPage {
  if (shape === 'openai') {
    const list = openaiList.parse(json);
    return {
      models: list.data.map((m) => ({
        id: m.id,
        created: m.created !== undefined && Number.isSafeInteger(m.created) ? m.created : 0,
        ...(m.owned_by !== undefined && { ownedBy: m.owned_by }),
      })),
    };
  }
  const list = anthropicList.parse(json);
  const last = list.last_id ?? list.data.at(-1)?.id;
  return {
    models: list.data.map((m) => ({
      id: m.id,
      created: unixSeconds(m.created_at),
      ...(m.display_name !== undefined && { displayName: m.display_name }),
    })),
    ...(list.has_more === true && last !== undefined && { nextAfterId: last }),
  };
}

/** One model in the caller's shape; `owner` names who serves it when the provider did not say. */
export function renderModel(shape: ModelListShape, m: ListedModel, owner: string): Record<string, unknown> {
  return shape === 'openai'
    ? { id: m.id, object: 'model', created: m.created, owned_by: m.ownedBy ?? owner }
    : { type: 'model', id: m.id, display_name: m.displayName ?? m.id, created_at: isoOf(m.created) };
}

/** Paging of Anthropic's list (`limit` 1-1000, default 20; `after_id` or `before_id`). */
export interface ModelPageQuery {
  limit?: number;
  afterId?: string;
  beforeId?: string;
}

/**
 * The whole list in the caller's shape: OpenAI's in one piece, Anthropic's as the page `page`
 * asks for (models listed after `afterId`, or before `beforeId`).
 */
export function renderModelList(
  shape: ModelListShape,
  models: ReadonlyArray<{ model: ListedModel; owner: string }>,
  page: ModelPageQuery = {},
): Record<string, unknown> {
  if (shape === 'openai') {
    return { object: 'list', data: models.map((m) => renderModel(shape, m.model, m.owner)) };
  }
  const limit = page.limit ?? 20;
  let from = 0;
  let to = models.length;
  if (page.afterId !== undefined) {
    const i = models.findIndex((m) => m.model.id === page.afterId);
    from = i < 0 ? models.length : i + 1;
    to = Math.min(models.length, from + limit);
  } else if (page.beforeId !== undefined) {
    const i = models.findIndex((m) => m.model.id === page.beforeId);
    to = i < 0 ? 0 : i;
    from = Math.max(0, to - limit);
  } else {
    to = Math.min(models.length, limit);
  }
  const data = models.slice(from, to).map((m) => renderModel(shape, m.model, m.owner));
  const hasMore = page.beforeId !== undefined ? from > 0 : to < models.length;
  return {
    data,
    has_more: hasMore,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data.at(-1)?.id as string | undefined) ?? null,
  };
}
