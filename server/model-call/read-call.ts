/**
 * Stage 1 of a model call: read the request at the edge. Parses and checks the body, finds the
 * provider serving the model, and wires an abort that fires when the client goes away.
 */
import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { OdaError } from '../../lib/errors.ts';
import type { FormatAdapter, WireFormat } from '../../providers/provider.ts';
import { FORMATS, type ResolvedProvider } from '../../providers/registry.ts';
import type { AppContext } from '../app-context.ts';
import type { Caller } from '../auth.ts';
import { parseJsonBody } from '../json-body.ts';
import type { Logger } from '../logger.ts';
import type { BodyShape } from '../json-limits.ts';
import { abortWhenClientGone } from '../client-gone.ts';

/** The route a model call came in on: its fixed path and the query parameters it forwards. */
export interface ModelRoute {
  path: string;
  query?: Readonly<Record<string, readonly string[]>>;
  /**
   * The side conversation every call of this route belongs to (`POST /v1/responses/compact`:
   * `compaction`), whatever the request looks like; absent, the session rules place it.
   */
  side?: string;
}

/** What the edge knows of one model call; every later stage reads it. */
export interface ModelCall {
  readonly requestId: string;
  readonly startedAt: number;
  readonly route: ModelRoute;
  readonly adapter: FormatAdapter;
  readonly provider: ResolvedProvider;
  readonly model: string;
  /** The body as the client sent it (bytes) and parsed. */
  readonly raw: Buffer;
  readonly body: Record<string, unknown>;
  /** Where the body's messages, tools and top-level members are in `raw` (its shape scan). */
  readonly shape: BodyShape | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly query: Readonly<Record<string, unknown>>;
  readonly caller: Caller;
  /** Aborted when the client goes away before the answer is complete. */
  readonly abort: AbortController;
  /** What every log line of the call says (request id, provider, model; the chat once bound). */
  readonly logFields: Readonly<Record<string, unknown>>;
  /**
   * A logger with `logFields`, made when a line is first written (most calls write one) and kept
   * until a field changes.
   */
  readonly log: Logger;
  /** Sets a field of every later log line (the chat, once bound). */
  setLogField(key: string, value: unknown): void;
}

/** Reads and checks a model call; throws a 400/404 in the endpoint's shape when it cannot go on. */
export function readCall(
  app: AppContext,
  req: Request,
  res: Response,
  format: WireFormat,
  route: ModelRoute,
): ModelCall {
  const requestId = (res.locals.requestId as string | undefined) ?? randomUUID();
  const startedAt = app.clock.now();
  const abort = abortWhenClientGone(res);
  const adapter = FORMATS[format];
  const shape = res.locals.bodyShape as BodyShape | undefined;
  // A long chat's body is parsed by the pieces its shape scan located (server/json-body.ts), its
  // history's messages copied from the chat's previous body where the bytes are the same.
  const { raw, body } = parseJsonBody(req.body, shape, app.parsedLists);
  // The format checks its body's shape at the edge (a 400 naming the field).
  const { model } = adapter.parseBody(body);
  const provider = app.registry.resolve(format, model);
  if (!provider) {
    throw new OdaError(
      'ODA_ERR_NO_PROVIDER',
      404,
      `no configured ${format} provider serves model "${model}"`,
      {
        param: 'model',
      },
    );
  }
  const logFields: Record<string, unknown> = { reqId: requestId, provider: provider.config.name, model };
  return new ReadModelCall(
    requestId,
    startedAt,
    route,
    adapter,
    provider,
    model,
    raw,
    body,
    shape,
    req.headers,
    req.query as Record<string, unknown>,
    res.locals.caller as Caller,
    abort,
    logFields,
    app.logger,
  );
}

/**
 * A class, not an object literal with a getter: every model call makes one, and V8 builds a
 * literal's accessor at run time (about 1 KB a call as a literal, 0.2 KB as a class, measured).
 */
class ReadModelCall implements ModelCall {
  constructor(
    readonly requestId: string,
    readonly startedAt: number,
    readonly route: ModelRoute,
    readonly adapter: FormatAdapter,
    readonly provider: ResolvedProvider,
    readonly model: string,
    readonly raw: Buffer,
    readonly body: Record<string, unknown>,
    readonly shape: BodyShape | undefined,
    readonly headers: IncomingHttpHeaders,
    readonly query: Readonly<Record<string, unknown>>,
    readonly caller: Caller,
    readonly abort: AbortController,
    readonly logFields: Record<string, unknown>,
    private readonly logger: Logger,
  ) {}

  private made: Logger | undefined;

  get log(): Logger {
    return (this.made ??= this.logger.child(this.logFields));
  }

  setLogField(key: string, value: unknown): void {
    this.logFields[key] = value;
    this.made = undefined;
  }
}
