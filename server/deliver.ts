/** Sends the provider's answer to the client: streams piped as they arrive, JSON passed whole. */
import type { Response } from 'express';
import type { IncomingHttpHeaders } from 'node:http';
import type { FormatAdapter, NormalizedResponse } from '../providers/provider.ts';
import {
  isEventStream,
  toUpstreamError,
  type UpstreamError,
  type UpstreamResponse,
} from '../providers/upstream-client.ts';
import type { RepairLoopResult } from '../middleware/repair-loop.ts';
import { SseEventFilter } from '../lib/sse-event-filter.ts';
import { isClientGone } from './client-gone.ts';
import { StreamRecord } from './stream-record.ts';
import { cutShort, markCut, providerErrorReason, type CutReason } from './cut-short.ts';

const SKIP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'content-length',
  'content-encoding',
  'date',
  'server',
  // The provider's host, not the gateway's: no cookies, no alternative services, no HSTS pinning
  // of the gateway's name, no navigation elsewhere, no browser policy (CSP; CORS, as `access-control-*`
  // below) set for the gateway's origin by the provider (SPEC section 14).
  'set-cookie',
  'set-cookie2',
  'alt-svc',
  'strict-transport-security',
  'location',
  'refresh',
  'content-security-policy',
  'content-security-policy-report-only',
  'proxy-authenticate',
  'upgrade',
  'trailer',
]);

/** The gateway's own headers (SPEC section 14): a provider answer can never set or overwrite them. */
function gatewayOwned(name: string): boolean {
  return name.startsWith('x-oda-') || name === 'x-session-id';
}

/**
 * A stream's status and headers go out with its first bytes when those are already there (a
 * provider usually sends its headers and first event together): one write instead of two, and the
 * client's first event one system call sooner. When no bytes have gone out by the next turn of the
 * event loop (a slow first token, a Responses stream waiting for its answer's id), the headers go
 * on their own then, so the client sees the status at once either way.
 */
function sendStreamHeadersSoon(res: Response): void {
  setImmediate(() => {
    if (!res.headersSent && !res.destroyed && !res.writableEnded) res.flushHeaders();
  });
}

/**
 * Copies a provider's response headers, less hop-by-hop ones (also those its `connection` header
 * names) and length/encoding ones, the provider
 * host's own (cookies, navigation, browser policy), and the gateway's own headers (those already
 * set stay as the gateway set them). Values come with the provider keys already masked (the
 * upstream client masks them).
 */
export function copyHeaders(res: Response, headers: IncomingHttpHeaders): void {
  // Headers the provider's `connection` header names belong to that hop too (RFC 9110, 7.6.1).
  const hop = headers.connection;
  const named = hop
    ? new Set(
        String(hop)
          .toLowerCase()
          .split(',')
          .map((n) => n.trim()),
      )
    : undefined;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || SKIP.has(name) || name.startsWith('access-control-') || gatewayOwned(name))
      continue;
    if (named?.has(name)) continue;
    res.setHeader(name, value);
  }
}

export interface DeliveryOutcome {
  streamed: boolean;
  /** False when the stream ended early (client gone, upstream reset or idle timeout). */
  complete: boolean;
  /**
   * What broke a stream off while the client was still there (the provider's connection reset,
   * `timeouts.idleMs` passed without a byte, a body that could not be decoded); undefined when the
   * stream closed (whole or not) or the client left.
   */
  brokenBy?: UpstreamError;
  response: NormalizedResponse | undefined;
  /**
   * Why an answer failed although its status is a 2xx: the provider said so inside the stream or
   * in its JSON body (its message), or the body of an answer read whole is not JSON.
   */
  failure?: string;
  /**
   * Why a stream is not the whole answer though the client stayed: `upstream` (its connection
   * broke, it went silent, or it closed before saying it was over), or `provider-error:<type>`
   * (the provider said inside it that the answer failed). Counted in `oda_requests_cut_total`.
   */
  cutBy?: CutReason;
  /** Why a streamed answer is not in the log (larger than the gateway logs); its stream went out all the same. */
  notRecorded?: string;
}

/**
 * Delivers a 2xx answer. A stream is written chunk by chunk (with backpressure) and observed for the
 * log. A JSON answer is read whole first: when it cannot be (it broke off, the client left, it ran
 * past its cap), nothing has gone out and the UpstreamError is thrown, `beforeEnd` not called.
 */
export async function deliverSuccess(
  res: Response,
  upstream: UpstreamResponse,
  adapter: FormatAdapter,
  signal: AbortSignal,
  /** Runs before the last byte goes out, so the log holds the answer before the client has it all. */
  beforeEnd: (outcome: DeliveryOutcome) => Promise<void>,
  /**
   * Runs once with the answer's id (Responses `resp_...`) before the bytes that carry it go out:
   * the client can name the answer from then on (retrieve or cancel it mid-stream), so whatever
   * lets it do so must be in place first. Never throws.
   */
  onResponseId?: (responseId: string) => Promise<void>,
  /** Most characters of a streamed answer the log keeps (`MAX_RECORDED_STREAM_CHARS` by default). */
  maxRecordedChars?: number,
  /**
   * Events of a stream the client did not ask for (the usage-only chunk of a Chat Completions
   * stream whose usage the gateway asked for): read for the log, kept from the client.
   */
  hideEvent?: (event: Buffer) => boolean,
): Promise<DeliveryOutcome> {
  copyHeaders(res, upstream.headers);
  res.status(upstream.status);
  if (isEventStream(upstream.headers)) {
    sendStreamHeadersSoon(res);
    const record = new StreamRecord(adapter, maxRecordedChars);
    const acc = record.accumulator;
    let complete = false;
    // True when the provider closed its stream normally: the client gets the same close.
    let closedNormally = false;
    let brokenBy: UpstreamError | undefined;
    let idSeen = onResponseId === undefined;
    // Whole events wait in the filter to be judged; everything else goes on as it comes.
    const filter = hideEvent ? new SseEventFilter(hideEvent) : undefined;
    try {
      for await (const chunk of upstream.body) {
        if (signal.aborted) break;
        const bytes = chunk as Buffer;
        // Until the answer's id is known, the log reads each chunk before it goes out (the id must
        // be in place first); after that the chunk goes out first and the log reads it while the
        // bytes travel, so the log's parse is not on the path of the client's bytes.
        const recordFirst = !idSeen;
        if (recordFirst) {
          record.push(bytes);
          const id = acc.responseId?.();
          if (id !== undefined) {
            idSeen = true;
            await onResponseId?.(id);
          }
        }
        const out = filter ? filter.push(bytes) : bytes;
        const flowing = out.length === 0 || res.write(out);
        if (!recordFirst) record.push(bytes);
        // A client already gone emits no more `drain` nor `close`: nothing to wait for.
        if (!flowing && !isClientGone(res))
          await new Promise<void>((resolve) => {
            const done = () => {
              res.off('drain', done);
              res.off('close', done);
              resolve();
            };
            res.on('drain', done);
            res.on('close', done);
          });
      }
      record.end();
      closedNormally = !signal.aborted;
      // A stream that closed before saying it was over delivered only part of the answer.
      complete = closedNormally && acc.ended();
    } catch (err) {
      complete = false;
      if (!signal.aborted) brokenBy = toUpstreamError(err);
    }
    const failure = acc.failure?.();
    const notRecorded = record.notRecorded();
    // The provider's word that the answer failed names the cut; else a stream that broke or closed
    // early was cut by the provider (a client that left cut its own).
    const cutBy: CutReason | undefined = signal.aborted
      ? undefined
      : failure !== undefined
        ? providerErrorReason(acc.failureType?.())
        : complete
          ? undefined
          : 'upstream';
    const outcome: DeliveryOutcome = {
      streamed: true,
      complete,
      response: safeResult(() => record.result()),
      ...(failure !== undefined ? { failure } : {}),
      ...(brokenBy ? { brokenBy } : {}),
      ...(notRecorded !== undefined ? { notRecorded } : {}),
      ...(cutBy ? { cutBy } : {}),
    };
    // Bytes the filter still holds: what followed the last whole event, sent as they came.
    const rest = filter && !signal.aborted ? filter.end() : undefined;
    if (rest && rest.length > 0) res.write(rest);
    // A stream that broke before its first bytes still gives the client its status first.
    if (!res.headersSent && !signal.aborted) res.flushHeaders();
    await beforeEnd(outcome);
    if (closedNormally) {
      // The client gets the provider's close; the answer it carries is counted as cut all the same.
      if (cutBy) markCut(res, cutBy);
      res.end();
    } else {
      upstream.body.destroy();
      // The client is still there (not aborted): the provider's stream broke off (reset, idle timeout).
      if (signal.aborted) res.destroy();
      else cutShort(res, cutBy ?? 'upstream');
    }
    return outcome;
  }
  let text: string;
  try {
    text = await upstream.body.text();
  } catch (err) {
    // The provider's answer broke off (reset, idle timeout, client gone) before it was whole, or
    // was longer than the gateway reads whole. Nothing of it reached the client, which gets the
    // gateway's error instead: the caller logs the call as failed with what the client got.
    throw toUpstreamError(err);
  }
  // The client gets the answer as sent; the log says when it is not one: an error body sent with
  // a 2xx, a failed response, or a body that is not JSON at all (an empty one, a proxy's page).
  let response: NormalizedResponse | undefined;
  let failure: string | undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    failure = `the provider's answer (HTTP ${upstream.status}) is ${text.trim() === '' ? 'empty' : 'not JSON'}`;
  }
  if (failure === undefined) {
    failure = adapter.answerFailure(json);
    response = safeResult(() => adapter.normalizeResponse(json));
  }
  if (response?.responseId !== undefined) await onResponseId?.(response.responseId);
  const outcome: DeliveryOutcome = {
    streamed: false,
    complete: true,
    response,
    ...(failure !== undefined ? { failure } : {}),
  };
  await beforeEnd(outcome);
  res.end(text);
  return outcome;
}

function safeResult(fn: () => NormalizedResponse): NormalizedResponse | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}

/**
 * Returns a final refusal as the provider sent it, retry headers included. A transient failure the
 * gateway gave up on (overloaded, rate limited, 5xx; its retries spent, or a longer wait asked for
 * than `retries.maxDelayMs`) leaves the decision to the client, whose own backoff is longer than a
 * gateway should hold a request; only an answer a retry cannot change says
 * `x-should-retry: false` (SPEC section 3).
 */
export function deliverFailure(res: Response, result: Extract<RepairLoopResult, { ok: false }>): void {
  copyHeaders(res, result.res.headers);
  if (result.refusal.kind !== 'transient' && result.gaveUp === undefined)
    res.setHeader('x-should-retry', 'false');
  res.status(result.res.status).end(result.bodyText);
}
