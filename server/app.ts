/**
 * createApp builds the gateway (no listen): config and dependencies are arguments, there is no
 * global mutable state, so tests start as many gateways as they like on ephemeral ports.
 */
import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { randomUUID } from 'node:crypto';
import { OdaError } from '../lib/errors.ts';
import { systemClock, type Clock } from '../lib/clock.ts';
import { ProviderRegistry } from '../providers/registry.ts';
import { UpstreamClient } from '../providers/upstream-client.ts';
import type { LogBackend } from '../chat-log/store.ts';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { RedisLogBackend } from '../chat-log/store-redis.ts';
import { AttachmentStore } from '../chat-log/attachments.ts';
import { ChatLog } from '../chat-log/chat-log.ts';
import { responseOwnersFor } from '../chat-log/response-owners.ts';
import type { AppContext } from './app-context.ts';
import { authenticate } from './auth.ts';
import { bodyDeadline } from './body-deadline.ts';
import { cutReason } from './cut-short.ts';
import { Drain, refuseWhileDraining } from './drain.ts';
import { UnrecordedAnswers, type UnrecordedAnswersOptions } from './unrecorded-answers.ts';
import { jsonContentTypeOnly } from './content-type-guard.ts';
import { fairShare } from './fair-share.ts';
import { CachedItemOwners } from './item-owners-cache.ts';
import { originGuard } from './origin-guard.ts';
import { readBody } from './read-body.ts';
import { TurnTaker } from '../lib/in-turns.ts';
import { ChatBinder } from './chat-binder.ts';
import { CacheKeyRefusals } from '../middleware/prompt-caching/cache-key-refusals.ts';
import { StreamUsageRefusals } from '../middleware/stream-usage/stream-usage-refusals.ts';
import type { Config } from '../config/config.ts';
import { errorHandler } from './error-handler.ts';
import { LANE_ROUTE, mountModelLane } from './model-lane.ts';
import { DEFAULT_JSON_LIMITS, jsonLimits } from './json-limits.ts';
import { LimitedLog } from './limited-log.ts';
import { createLogger, type Logger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { MemoryRateCounter, RedisRateCounter, rateLimit, type RateCounter } from './rate-limit.ts';
import {
  CHAT_COMPLETIONS_PATH,
  chatCompletionsHandler,
  chatCompletionsRoutes,
} from './routes/chat-completions.ts';
import { countTokensRoutes } from './routes/count-tokens.ts';
import { embeddingsRoutes } from './routes/embeddings.ts';
import { healthRoutes } from './routes/health.ts';
import { MESSAGES_PATH, messagesHandler, messagesRoutes } from './routes/messages.ts';
import {
  RESPONSES_COMPACT_PATH,
  RESPONSES_PATH,
  responsesCompactHandler,
  responsesHandler,
  responsesRoutes,
} from './routes/responses.ts';
import { storedResponsesRoutes } from './routes/responses-stored.ts';
import { metricsRoutes } from './routes/metrics.ts';
import { modelsRoutes } from './routes/models.ts';
import { openapiRoutes } from './routes/openapi.ts';
import { sessionsRoutes } from './routes/sessions.ts';
import { usageRoutes } from './routes/usage.ts';
import { usageLedgerFor } from '../chat-log/usage-ledger.ts';
import { logViewerApiRoutes, logViewerPageRoutes } from './routes/ui.ts';
import { ParsedLists } from './parsed-lists.ts';

/** The build identity stored with checkpoints: a checkpoint of another build is rebuilt, never served. */
export const BUILD = 'oda-gateway@0.1.0';

export interface AppDeps {
  logger?: Logger;
  clock?: Clock;
  /** The chat log backend; default: from `config.store` (the file store under `dataDir`, or Redis). */
  backend?: LogBackend;
  /** Waits before a retry; ends early when `signal` aborts (the client left). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  ids?: () => string;
  metrics?: Metrics;
  /** Bounds and pauses of the background tries of answers whose record failed (tests shorten them). */
  unrecorded?: Partial<
    Pick<UnrecordedAnswersOptions, 'maxWaiting' | 'maxAgeMs' | 'firstDelayMs' | 'maxDelayMs'>
  >;
  /**
   * Open the store's index (and start its check) in createApp; default true. The process passes
   * false and calls `Gateway.openStore` once it listens, so a start that cannot bind its port leaves
   * the index alone.
   */
  openStoreAtStart?: boolean;
  /** Most characters of a streamed answer the chat log keeps (tests lower it); default 64 Mi. */
  maxRecordedStreamChars?: number;
}

export interface Gateway {
  readonly app: Express;
  readonly context: AppContext;
  /** Opens the store's index and starts its check in the background (once; see `openStoreAtStart`). */
  openStore(): void;
  /** Flushes the chat log and closes upstream connections. */
  close(): Promise<void>;
}

/** The backend `config.store` names. Attachments stay in `attachmentsDir` either way. */
function storeBackend(config: Readonly<Config>, logger: Logger): LogBackend {
  const log = (level: 'debug' | 'info' | 'warn', message: string, fields: Record<string, unknown>) =>
    logger[level](fields, message);
  if (config.store.kind === 'redis') {
    return new RedisLogBackend({
      url: config.store.url,
      prefix: config.store.prefix,
      onError: (err) => logger.warn({ error: err.message }, 'redis connection error'),
      log,
    });
  }
  return new FileLogBackend({
    dataDir: config.dataDir,
    fsync: config.store.kind === 'file' ? config.store.fsync : 'batch',
    log,
    // Two gateways on one dataDir would interleave appends and rebuild each other's index.
    claim: true,
  });
}

/** Rate counts are shared through Redis when the chats are, so replicas share one budget. */
function rateCounter(backend: LogBackend): RateCounter {
  return backend instanceof RedisLogBackend
    ? new RedisRateCounter((op) => backend.run(op), backend.prefix)
    : new MemoryRateCounter();
}

/** Resolves after `ms`, or as soon as `signal` aborts: a retry backoff holds no call nobody waits for. */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

export function createApp(config: Readonly<Config>, deps: AppDeps = {}): Gateway {
  const logger = deps.logger ?? createLogger(config.logLevel);
  const clock = deps.clock ?? systemClock;
  const backend = deps.backend ?? storeBackend(config, logger);
  const chatLog = new ChatLog({
    backend,
    attachments: new AttachmentStore({ dir: config.attachmentsDir }),
    clock,
    build: BUILD,
  });
  const passThroughCredentials = !config.teams || config.teams.length === 0;
  const turns = new TurnTaker();
  const metrics = deps.metrics ?? new Metrics();
  const random = deps.random ?? Math.random;
  const limitedLog = new LimitedLog(logger, clock);
  const context: AppContext = {
    config,
    logger,
    limitedLog,
    clock,
    metrics,
    registry: new ProviderRegistry(config.providers),
    upstream: new UpstreamClient(config.timeouts, {
      // Room for every call the gateway lets in, plus the uncounted reads (the providers' model lists).
      connections: config.server.maxConcurrent + 64,
      secrets: config.providers.map((p) => p.apiKey),
    }),
    chatLog,
    chats: new ChatBinder(chatLog, config, clock),
    parsedLists: new ParsedLists(),
    responseOwners: responseOwnersFor(backend, config.dataDir),
    itemOwners: new CachedItemOwners(responseOwnersFor(backend, config.dataDir, 'item'), clock),
    usage: usageLedgerFor(backend, config.dataDir),
    sleep: deps.sleep ?? abortableSleep,
    random,
    cacheKeyRefusals: new CacheKeyRefusals((provider) =>
      logger.warn(
        { provider },
        `provider ${provider} refuses prompt_cache_key: requests to it now go without the key; set providers[].promptCaching.cacheKey: false for this provider to skip the refused attempt after a restart`,
      ),
    ),
    streamUsageRefusals: new StreamUsageRefusals((provider) =>
      logger.warn(
        { provider },
        `provider ${provider} refuses stream_options: streamed Chat Completions requests to it now go without asking for usage, so those whose client does not ask are counted with no tokens; set providers[].streamUsage: off for this provider to skip the refused attempt after a restart`,
      ),
    ),
    turns,
    passThroughCredentials,
    drain: new Drain(),
    unrecorded: new UnrecordedAnswers({ logger, metrics, random, ...deps.unrecorded }),
    ...(deps.maxRecordedStreamChars !== undefined
      ? { maxRecordedStreamChars: deps.maxRecordedStreamChars }
      : {}),
  };
  context.metrics.observeChats(() => chatLog.stats());
  // The chat index's check (and rebuild, when needed) starts now, in the background.
  if (deps.openStoreAtStart !== false) backend.openIndex?.();
  const ids = deps.ids ?? randomUUID;

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // What every request goes through first, in this order.
  const front: RequestHandler[] = [
    function requestId(req: Request, res: Response, next: NextFunction) {
      res.locals.requestId = ids();
      res.setHeader('x-oda-request-id', res.locals.requestId as string);
      const started = performance.now();
      // `close` comes for every response, whole or cut short (`finish` only for whole ones).
      res.once('close', () => {
        const route =
          (req.route as { path?: string } | undefined)?.path ??
          (res.locals[LANE_ROUTE] as string | undefined) ??
          'unmatched';
        const status = res.headersSent ? String(res.statusCode) : 'none';
        context.metrics.requests.inc({ route, status });
        const cut = cutReason(res, context.drain.cutting);
        if (cut) context.metrics.requestsCut.inc({ route, reason: cut });
        logger.debug(
          {
            reqId: res.locals.requestId,
            method: req.method,
            route,
            status,
            ...(cut ? { cut } : {}),
            ms: Math.round(performance.now() - started),
          },
          'request',
        );
      });
      next();
    },
    // On shutdown, requests on connections opened before are refused (and counted, above).
    refuseWhileDraining(context.drain),
    function originFormOnly(req: Request, _res: Response, next: NextFunction) {
      // Node accepts absolute-form targets (`http://host/v1/...`, `munity://x/v1/...`) and Express
      // still routes them by their path: refuse them before anything else runs (SPEC section 14).
      if (!req.url.startsWith('/')) {
        throw new OdaError(
          'ODA_ERR_INVALID_REQUEST',
          400,
          'request target must be a path (origin-form, such as /v1/messages); absolute URLs are not accepted',
        );
      }
      next();
    },
    // Hardening for a shared gateway (SPEC section 14): browsers' pages and rebound names first.
    originGuard({
      listenHost: config.server.host,
      allowedOrigins: config.server.allowedOrigins,
      allowedHosts: config.server.allowedHosts,
    }),
    bodyDeadline(config.timeouts.bodyMs, limitedLog),
  ];
  // What every call goes through after the open routes (health, metrics, ...), in this order.
  const callGuards: RequestHandler[] = [
    authenticate(config),
    rateLimit(config, rateCounter(backend), clock),
    jsonContentTypeOnly(),
    // A slot per call before its body is read: bodies in memory are bounded by server.maxConcurrent.
    fairShare(config),
    readBody(config.server.bodyLimit),
    jsonLimits(
      {
        ...DEFAULT_JSON_LIMITS,
        maxMessages: config.server.maxMessages,
        maxImages: config.server.maxImagesPerRequest,
      },
      context.turns,
    ),
  ];
  const onError = errorHandler(logger, limitedLog);
  // The model calls skip Express's dispatch and the router's walk: the same middleware, in order.
  mountModelLane(
    app,
    new Map([
      [CHAT_COMPLETIONS_PATH, chatCompletionsHandler(context)],
      [MESSAGES_PATH, messagesHandler(context)],
      [RESPONSES_PATH, responsesHandler(context)],
      [RESPONSES_COMPACT_PATH, responsesCompactHandler(context)],
    ]),
    [...front, ...callGuards],
    onError,
  );
  app.use(...front);
  app.use(healthRoutes(context));
  app.use(metricsRoutes(context));
  app.use(openapiRoutes());
  app.use(logViewerPageRoutes());
  app.use(...callGuards);
  // The model routes again, for the spellings the lane leaves to the router (case, trailing slash).
  app.use(chatCompletionsRoutes(context));
  app.use(messagesRoutes(context));
  app.use(responsesRoutes(context));
  app.use(storedResponsesRoutes(context));
  app.use(embeddingsRoutes(context));
  app.use(countTokensRoutes(context));
  app.use(modelsRoutes(context));
  app.use(sessionsRoutes(context));
  app.use(usageRoutes(context));
  app.use(logViewerApiRoutes(context));
  // Any other path: a 404 in the shape of the format the request looks like (SPEC section 2).
  app.use(function notFound(req: Request) {
    // A WebSocket handshake (Codex on the OpenAI provider tries `GET /v1/responses` over WebSocket
    // first): 426 makes such a client fall back to HTTP at once, where a 404 has it retry for
    // seconds before every session. A 426 names the protocol the server requires in `Upgrade`
    // (RFC 9110 15.5.22): plain HTTP/1.1, the one the request came in, with no upgrade; `Upgrade`
    // is hop-by-hop, so `Connection` lists it (RFC 9110 7.8). Clients act on the status alone (a
    // WebSocket client fails on anything but 101 before reading a header; Codex falls back on 426).
    if (/\bwebsocket\b/i.test(req.headers.upgrade ?? '')) {
      throw new OdaError(
        'ODA_ERR_WEBSOCKET_UNSUPPORTED',
        426,
        `the gateway does not serve WebSocket connections (${req.method} ${req.path}); send the request over HTTP`,
        { headers: { upgrade: 'HTTP/1.1', connection: 'Upgrade' } },
      );
    }
    throw new OdaError('ODA_ERR_NOT_FOUND', 404, `the gateway does not serve ${req.method} ${req.path}`);
  });
  app.use(onError);

  return {
    app,
    context,
    openStore: () => backend.openIndex?.(),
    async close() {
      // What still waits to be recorded was given its last try (main's shutdown flushes it first).
      context.unrecorded.close();
      context.metrics.close();
      limitedLog.flush();
      await context.usage.close();
      await chatLog.close();
      await context.upstream.close();
    },
  };
}
