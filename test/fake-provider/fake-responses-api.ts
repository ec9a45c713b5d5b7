/**
 * The fake provider's Responses API routes: `POST /v1/responses` (streamed and not, refusing the
 * way the API does; not streamed, `background: true` is answered queued and has finished by the
 * time it is retrieved, as JSON or, with `stream=true` (and `starting_after`), as its event
 * stream), the stored responses (`GET`/`DELETE /v1/responses/{id}`, `cancel`,
 * `input_items` paged by `limit`, `after`, `before` and `order`), `POST /v1/responses/input_tokens`
 * and `POST /v1/responses/compact`.
 */
import type { FakeProviderOptions, WireReply } from './fake-provider.ts';
import {
  responseIds,
  responsesBodies,
  responsesContextError,
  responsesEvents,
  responsesFailedEvents,
  responsesImages,
  responsesMessage,
  responsesObject,
  storedInputItems,
  type ResponsesScript,
  type StoredResponse,
} from './fake-responses.ts';

type Obj = Record<string, unknown>;

const CREATED_AT = 1_767_225_600;

export class FakeResponsesApi {
  /** Responses created with `store` (the API's default), by id. */
  readonly stored = new Map<string, StoredResponse>();
  private created = 0;

  constructor(private readonly options: () => FakeProviderOptions) {}

  /** The reply for a Responses route, or undefined when `path` is not one. */
  route(method: string, path: string, body: Obj, query = new URLSearchParams()): WireReply | undefined {
    if (path === '/v1/responses' && method === 'POST') return this.create(body);
    if (path === '/v1/responses/compact' && method === 'POST') return this.compact(body);
    if (path === '/v1/responses/input_tokens' && method === 'POST') {
      return { json: { object: 'response.input_tokens', input_tokens: inputTokens(body) } };
    }
    const match = /^\/v1\/responses\/([^/]+)(\/cancel|\/input_items)?$/.exec(path);
    if (!match) return undefined;
    const id = decodeURIComponent(match[1]!);
    const stored = this.stored.get(id);
    if (!stored) return { status: 404, json: responsesBodies.notFound(id) };
    switch (`${method} ${match[2] ?? ''}`) {
      case 'GET ':
        // A background response runs on at the provider: it is done by the time it is polled.
        if (stored.finished) stored.response = stored.finished;
        delete stored.finished;
        if (query.get('stream') === 'true' && stored.response.background === true) {
          return this.streamed(stored.response, query.get('starting_after'));
        }
        return { json: stored.response };
      case 'DELETE ':
        this.stored.delete(id);
        return { json: { id, object: 'response.deleted', deleted: true } };
      case 'POST /cancel':
        if (stored.response.background !== true) return { status: 400, json: responsesBodies.cannotCancel() };
        // A background response still running stops where it is (no output).
        delete stored.finished;
        stored.response = { ...stored.response, status: 'cancelled' };
        return { json: stored.response };
      case 'GET /input_items':
        return { json: inputItemsPage(stored.inputItems, query) };
      default:
        return { status: 405, json: responsesBodies.notFound(id) };
    }
  }

  /**
   * Answers `request` with `script`: the response object, or its event stream when the request
   * asks for one; stored unless `store: false`.
   */
  answer(request: Obj, script: ResponsesScript): WireReply {
    this.created += 1;
    const ids = responseIds(this.created);
    const response = responsesObject(
      request,
      script,
      ids.response,
      CREATED_AT + this.created,
      inputTokens(request),
    );
    // Not streamed, a background response is answered at once, queued with no output yet; it has
    // finished by the time it is retrieved.
    const queued = request.background === true && request.stream !== true;
    const answered = queued ? { ...response, status: 'queued', output: [], usage: null } : response;
    if (request.store !== false) {
      this.stored.set(ids.response, {
        response: answered,
        inputItems: storedInputItems(request, ids.item),
        ...(queued && { finished: response }),
      });
    }
    if (request.stream !== true) return { json: answered };
    return {
      sse: responsesEvents(response, script.pieces),
      chunkDelayMs: this.options().chunkDelayMs,
      ...(script.holdAfter && { holdAfter: script.holdAfter }),
    };
  }

  /**
   * A background response retrieved with `stream=true`: its event stream from the start, or only
   * the events after `startingAfter`'s sequence number (a client resuming a stream it lost).
   */
  private streamed(response: Obj, startingAfter: string | null): WireReply {
    const after = startingAfter === null ? -1 : Number(startingAfter);
    const events = responsesEvents(response).filter(
      (e) => (JSON.parse(e.data) as { sequence_number: number }).sequence_number > after,
    );
    return { sse: events, chunkDelayMs: this.options().chunkDelayMs };
  }

  /** `POST /v1/responses` without a script: refusals first, then the default answer. */
  private create(body: Obj): WireReply {
    const previous = body.previous_response_id;
    if (typeof previous === 'string' && !this.stored.has(previous)) {
      return { status: 400, json: responsesBodies.previousNotFound(previous) };
    }
    const missing = this.missingReference(body.input);
    if (missing !== undefined) return { status: 404, json: responsesBodies.itemNotFound(missing) };
    const refusal = this.refusal(body);
    if (refusal) return refusal;
    const { answer, streamPieces } = this.options();
    const streamed = body.stream === true && streamPieces !== undefined;
    const text = streamed ? streamPieces.join('') : (answer ?? 'Hello from the fake provider.');
    return this.answer(body, {
      output: [responsesMessage(text, 'msg_fake')],
      ...(streamed && { pieces: streamPieces }),
    });
  }

  /**
   * The id of the first `item_reference` in `input` naming no item this fake holds (an input or
   * output item of a response it stored), as the API looks references up.
   */
  private missingReference(input: unknown): string | undefined {
    if (!Array.isArray(input)) return undefined;
    const refs = input.filter(
      (item): item is Obj =>
        typeof item === 'object' && item !== null && (item as Obj).type === 'item_reference',
    );
    if (refs.length === 0) return undefined;
    const held = new Set<unknown>();
    for (const { response, inputItems } of this.stored.values()) {
      for (const item of [...inputItems, ...(Array.isArray(response.output) ? response.output : [])]) {
        if (typeof item === 'object' && item !== null) held.add((item as Obj).id);
      }
    }
    return refs.map((r) => String(r.id)).find((id) => !held.has(id));
  }

  /**
   * `POST /v1/responses/compact`: the conversation (a stored `previous_response_id`'s, then
   * `input`) compacted as the API does it: its user messages as they were sent, then one opaque
   * `compaction` item. Refuses as `POST /v1/responses` does.
   */
  private compact(body: Obj): WireReply {
    const previous = body.previous_response_id;
    const stored = typeof previous === 'string' ? this.stored.get(previous) : undefined;
    if (typeof previous === 'string' && !stored) {
      return { status: 400, json: responsesBodies.previousNotFound(previous) };
    }
    const refusal = this.refusal({ ...body, stream: false });
    if (refusal) return refusal;
    this.created += 1;
    const earlier = stored ? [...stored.inputItems, ...(stored.response.output as Obj[])] : [];
    const items = [...earlier, ...storedInputItems(body, () => '')];
    const users = items
      .filter((item) => item.role === 'user' && (item.type ?? 'message') === 'message')
      .map(({ id: _id, ...item }) => ({ type: 'message', ...item }));
    const n = this.created;
    const compaction = {
      type: 'compaction',
      id: `cmp_${n.toString(16).padStart(8, '0')}`,
      encrypted_content: Buffer.from(`compacted ${items.length} items, call ${n}`).toString('base64'),
    };
    const input = inputTokens(body);
    return {
      json: {
        id: responseIds(n).response,
        object: 'response.compaction',
        created_at: CREATED_AT + n,
        output: [...users, compaction],
        usage: {
          input_tokens: input,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: 40,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: input + 40,
        },
      },
    };
  }

  /** The API's refusal of `body`, as an HTTP error or (when configured) inside a 200 stream. */
  private refusal(body: Obj): WireReply | undefined {
    const { imageLimit, maxImageBytes, contextLimitChars } = this.options();
    const images = responsesImages(body);
    let error: { status: number; json: { error: Obj } } | undefined;
    const oversize = maxImageBytes === undefined ? undefined : images.find((i) => i.bytes > maxImageBytes);
    if (oversize && maxImageBytes !== undefined) {
      error = {
        status: 400,
        json: responsesBodies.imageTooLarge(oversize.param, oversize.bytes, maxImageBytes),
      };
    } else if (imageLimit !== undefined && images.length > imageLimit) {
      error = { status: 400, json: responsesBodies.tooManyImages(images.length, imageLimit) };
    } else if (
      contextLimitChars !== undefined &&
      JSON.stringify(body.input ?? '').length > contextLimitChars
    ) {
      error = { status: 400, json: responsesBodies.contextLength() };
    }
    if (!error) return undefined;
    const via = this.options().responsesStreamRefusal ?? 'http';
    if (body.stream !== true || via === 'http') return error;
    const e = error.json.error;
    const started = responsesObject(
      body,
      { output: [] },
      responseIds(++this.created).response,
      CREATED_AT,
      0,
    );
    return {
      sse: responsesFailedEvents(
        started,
        {
          code: typeof e.code === 'string' ? e.code : null,
          message: String(e.message),
          param: typeof e.param === 'string' ? e.param : null,
          type: typeof e.type === 'string' ? e.type : responsesContextError.type,
        },
        via,
      ),
    };
  }
}

/** An input item as the API lists it: a message typed, its string content one `input_text` part. */
function listedItem(item: Obj): Obj {
  if (item.role === undefined || (item.type !== undefined && item.type !== 'message')) return item;
  const content =
    typeof item.content === 'string' ? [{ type: 'input_text', text: item.content }] : item.content;
  return { ...item, type: 'message', content, status: item.status ?? 'completed' };
}

/**
 * A page of a stored response's input items as `GET /v1/responses/{id}/input_items` answers it:
 * newest first unless `order=asc`, at most `limit` (default 20), after or before an item's id.
 * @see https://platform.openai.com/docs/api-reference/responses/input-items
 */
function inputItemsPage(items: readonly Obj[], query: URLSearchParams): Obj {
  const ordered = query.get('order') === 'asc' ? [...items] : [...items].reverse();
  const limit = Number(query.get('limit') ?? 20);
  const after = query.get('after');
  const before = query.get('before');
  let from = 0;
  let to = ordered.length;
  if (after !== null) from = ordered.findIndex((item) => item.id === after) + 1;
  if (before !== null)
    to = Math.max(
      0,
      ordered.findIndex((item) => item.id === before),
    );
  const data = ordered.slice(from, Math.min(to, from + limit)).map(listedItem);
  return {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: from + data.length < to,
  };
}

/** The input tokens the fake bills: a quarter of the input's JSON length. */
function inputTokens(body: Obj): number {
  return Math.ceil(JSON.stringify(body.input ?? '').length / 4);
}
