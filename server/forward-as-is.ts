/**
 * The routes the gateway forwards as they are (SPEC section 2): stored responses, `input_tokens`,
 * embeddings. No chat log and no mechanisms; teams, rate limits and fair share apply before the
 * route runs, and here the upstream URL comes from the provider's `baseUrl` and the route's fixed
 * path, the headers from the same rules as a model call's, and the answer is piped back as it
 * arrives (a stream is never buffered).
 */
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { ProviderConfig } from '../config/config.ts';
import { OdaError } from '../lib/errors.ts';
import type { FormatAdapter } from '../providers/provider.ts';
import { isEventStream, toUpstreamError } from '../providers/upstream-client.ts';
import { buildUpstreamUrl } from '../providers/upstream-url.ts';
import type { AppContext } from './app-context.ts';
import { copyHeaders } from './deliver.ts';
import { upstreamFailure } from './upstream-failure.ts';
import { upstreamHeaders } from './upstream-headers.ts';
import { abortWhenClientGone } from './client-gone.ts';
import { observedEvents, observedJson, Records, type EventObserver } from './observed-body.ts';

export interface AsIsCall {
  provider: ProviderConfig;
  adapter: FormatAdapter;
  method: 'GET' | 'POST' | 'DELETE';
  /** The gateway's fixed route path with any id already checked, e.g. `/v1/responses/resp_1`. */
  routePath: string;
  /** The query parameters to forward, already checked (`queryOf`). */
  query?: Readonly<Record<string, string | readonly string[]>>;
  /** The body as the client sent it; none for reads. */
  body?: Buffer;
  /**
   * Reads a 2xx JSON answer (of at most `MAX_WHOLE_ANSWER_BYTES`) as it goes by: called with its
   * whole text before its last chunk goes out, so what it records is in place before the client
   * has the answer; every other chunk is passed on as it arrives. Never throws.
   */
  observeJson?: (text: string) => Promise<void>;
  /**
   * Reads a 2xx event stream event by event as it goes by (see `observedEvents`): each chunk goes
   * out as soon as it is read, after any record an event it completes started.
   */
  observeEvents?: EventObserver;
}

/** Sends `call` to its provider and pipes the answer (status, headers, body) back to the client. */
export async function forwardAsIs(
  app: AppContext,
  req: Request,
  res: Response,
  call: AsIsCall,
): Promise<void> {
  const { provider, adapter } = call;
  const abort = abortWhenClientGone(res);
  const url = buildUpstreamUrl(provider.baseUrl, adapter.apiPath(call.routePath), call.query ?? {});
  const headers = upstreamHeaders(
    req.headers,
    adapter,
    provider.apiKey,
    app.passThroughCredentials,
    provider.anthropicBetas,
  );
  if (call.body === undefined) delete headers['content-type'];
  else headers['content-length'] = String(call.body.length);
  const started = performance.now();
  let up;
  try {
    up = await app.upstream.send({
      url,
      method: call.method,
      headers,
      body: call.body,
      signal: abort.signal,
    });
  } catch (e) {
    const err = toUpstreamError(e);
    app.metrics.observeUpstream(provider.name, abort.signal.aborted ? 'aborted' : 'failed', started);
    if (err.code === 'aborted' && abort.signal.aborted) return;
    throw upstreamFailure(err, provider.name);
  }
  app.metrics.observeUpstream(provider.name, 'answered', started);
  app.logger.info(
    {
      reqId: res.locals.requestId,
      provider: provider.name,
      route: call.routePath,
      status: up.status,
      ms: Math.round(performance.now() - started),
    },
    'forwarded as is',
  );
  copyHeaders(res, up.headers);
  res.status(up.status);
  if (isEventStream(up.headers)) res.flushHeaders();
  // What an observer records is waited for before the call returns (and a call held at shutdown
  // with it), however the pipeline ended: the client may leave while a record is written.
  const records = new Records();
  try {
    // Read by iterating it: an event stream is masked as it is read (the upstream client's body).
    const ok = up.status >= 200 && up.status < 300;
    const observeJson = ok && isJson(up.headers['content-type']) ? call.observeJson : undefined;
    const observeEvents = ok && isEventStream(up.headers) ? call.observeEvents : undefined;
    await pipeline(async function* () {
      if (observeJson) return yield* observedJson(up.body, observeJson, records);
      if (observeEvents) return yield* observedEvents(up.body, observeEvents, records);
      yield* up.body;
    }, res);
  } catch (e) {
    // The client left, or the provider broke off: before any byte the client gets the gateway's
    // error; after, only the cut connection can say it.
    if (abort.signal.aborted) return;
    if (!res.headersSent) throw upstreamFailure(toUpstreamError(e), provider.name);
    res.destroy();
  } finally {
    await records.settled();
  }
}

function isJson(contentType: string | string[] | undefined): boolean {
  return String(contentType ?? '')
    .toLowerCase()
    .includes('application/json');
}

/** One query parameter a route forwards: a single value, or a list (`include[]=a&include[]=b`). */
export interface QueryParam {
  value: z.ZodType<string>;
  list?: boolean;
}

/** Values a forwarded query parameter may hold. */
export const queryValues = {
  id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'must be an id of 1-128 of A-Za-z0-9_-'),
  flag: z.enum(['true', 'false'], { error: 'must be true or false' }),
  count: z.string().regex(/^\d{1,9}$/, 'must be a whole number'),
  name: z.string().regex(/^[A-Za-z0-9_.:-]{1,200}$/, 'must be a name of A-Za-z0-9_.:-'),
  order: z.enum(['asc', 'desc'], { error: 'must be asc or desc' }),
};

/**
 * The client's query narrowed to the parameters a route forwards, each checked (a bad value is a
 * 400 naming the parameter); every other parameter stays at the gateway.
 */
export function queryOf(
  query: Readonly<Record<string, unknown>>,
  allowed: Readonly<Record<string, QueryParam>>,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, spec] of Object.entries(allowed)) {
    const given = query[name];
    if (given === undefined) continue;
    const values = Array.isArray(given) ? given : [given];
    if (values.length > 1 && !spec.list) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, `query parameter ${name} is given more than once`, {
        param: name,
      });
    }
    const checked = values.map((v) => {
      const r = spec.value.safeParse(v);
      if (!r.success) {
        throw new OdaError(
          'ODA_ERR_INVALID_REQUEST',
          400,
          `query parameter ${name} ${r.error.issues[0]!.message}`,
          { param: name },
        );
      }
      return r.data;
    });
    out[name] = spec.list ? checked : checked[0]!;
  }
  return out;
}
