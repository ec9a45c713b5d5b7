/**
 * One model call, from the client's body to the client's answer: parse at the edge, bind the chat,
 * run the pipeline, forward through the repair loop, deliver (streamed or not), log the response.
 */
import type { Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { OdaError } from '../lib/errors.ts';
import type { CallContext } from '../middleware/call-context.ts';
import { outgoingBytes } from '../middleware/call-context.ts';
import { runPipeline } from '../middleware/pipeline.ts';
import { imageOrdinals } from '../middleware/image-set-aside/index.ts';
import { runRepairLoop } from '../middleware/repair-loop.ts';
import { buildRepairs } from '../middleware/repairs.ts';
import type { FormatAdapter, WireFormat } from '../providers/provider.ts';
import { FORMATS } from '../providers/registry.ts';
import { UpstreamError } from '../providers/upstream-client.ts';
import { buildUpstreamUrl, forwardedQuery } from '../providers/upstream-url.ts';
import type { AppContext } from './app-context.ts';
import { contextWindowFor } from './model-facts.ts';
import { deliverFailure, deliverSuccess } from './deliver.ts';
import { upstreamHeaders } from './upstream-headers.ts';
import { upstreamFailure } from './upstream-failure.ts';
import { parseJsonBody } from './json-body.ts';

const bodyShape = z.looseObject({
  model: z.string({ error: 'model must be a string' }).min(1, 'model must not be empty'),
  messages: z.array(z.unknown(), { error: 'messages must be an array' }),
});

/** The route a model call came in on: its fixed path and the query parameters it forwards. */
export interface ModelRoute {
  path: string;
  query?: Readonly<Record<string, readonly string[]>>;
}

/** Handles POST /v1/chat/completions (openai) and POST /v1/messages (anthropic). */
export function modelCallHandler(app: AppContext, format: WireFormat, route: ModelRoute) {
  const adapter: FormatAdapter = FORMATS[format];
  return async function modelCall(req: Request, res: Response): Promise<void> {
    const requestId = (res.locals.requestId as string | undefined) ?? randomUUID();
    const startedAt = app.clock.now();
    // Abort the upstream call when the client goes away before the answer is complete.
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const { raw, body } = parseJsonBody(req.body);
    const shape = bodyShape.safeParse(body);
    if (!shape.success) {
      const issue = shape.error.issues[0]!;
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, issue.message, {
        param: issue.path.join('.') || null,
      });
    }
    const model = shape.data.model;
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
    const view = adapter.createView(body);
    const binding = await app.chats.bind({
      requestId,
      startedAt,
      adapter,
      providerName: provider.config.name,
      body,
      headers: req.headers,
      caller: res.locals.caller as import('./auth.ts').Caller,
    });
    res.setHeader('x-session-id', binding.chatId);
    const log = app.logger.child({
      reqId: requestId,
      chatId: binding.chatId,
      provider: provider.config.name,
      model,
    });

    const ctx: CallContext = {
      requestId,
      startedAt,
      config: app.config,
      clock: app.clock,
      adapter,
      providerName: provider.config.name,
      model,
      contextWindow: contextWindowFor(app.config, model),
      chatId: binding.chatId,
      raw,
      body,
      view,
      headers: req.headers,
      decisions: binding.decisions,
      lastCacheTouchAt: binding.lastCacheTouchAt,
      imageOrdinals: imageOrdinals(view),
      describeImage: (image, key) => binding.describeImage(image, key),
      record: (events) => binding.record(events),
      effects: {
        trimmed: 0,
        trimmedChars: 0,
        imagesSetAside: 0,
        imageRounds: 0,
        pruned: undefined,
        imageReplay: { imagesRemoved: 0, referencesRemoved: 0 },
      },
    };
    await runPipeline(ctx);

    const url = buildUpstreamUrl(
      provider.config.baseUrl,
      adapter.apiPath(route.path),
      forwardedQuery(req.query as Record<string, unknown>, route.query ?? {}),
    );
    const headers = upstreamHeaders(req.headers, adapter, provider.config.apiKey, app.passThroughCredentials);
    let upstreamStarted = 0;
    let result;
    const progress = { attempts: 0, retries: 0 };
    try {
      result = await runRepairLoop({
        progress,
        send: () => {
          upstreamStarted = performance.now();
          const bytes = outgoingBytes(ctx);
          return app.upstream
            .send({
              url,
              headers: { ...headers, 'content-length': String(bytes.length) },
              body: bytes,
              signal: abort.signal,
            })
            .then((r) => {
              app.metrics.upstreamLatency.observe(
                { provider: provider.config.name },
                (performance.now() - upstreamStarted) / 1000,
              );
              return r;
            });
        },
        classify: (status, text) => adapter.classifyRefusal(status, text, ctx.view.images().length),
        repairs: buildRepairs(ctx),
        retries: app.config.retries,
        sleep: app.sleep,
        now: () => app.clock.now(),
        random: app.random,
        onRetry: (reason, delayMs) => {
          app.metrics.retries.inc({
            reason: reason.split(':')[0] === 'status' ? reason : reason.split(':')[0]!,
          });
          log.warn({ reason, delayMs }, 'retrying upstream call');
        },
        onRepair: (kind) => app.metrics.repairs.inc({ kind }),
      });
    } catch (e) {
      const err = e instanceof UpstreamError ? e : undefined;
      // What the mechanisms already did (and recorded) is still reported on the error response.
      setEffectHeaders(res, ctx);
      recordEffectMetrics(app, ctx);
      await recordSafely(() =>
        binding.recordResponse({
          status: 0,
          ok: false,
          error: err?.message ?? String(e),
          attempts: progress.attempts,
          retries: progress.retries,
        }),
      );
      // A failed repair (e.g. a trim the log could not record) is the gateway's own error, not the provider's.
      if (!err) throw e;
      if (err.code === 'aborted') {
        log.info('client went away before the provider answered');
        return;
      }
      throw upstreamFailure(err, provider.config.name);
    }

    setEffectHeaders(res, ctx);
    recordEffectMetrics(app, ctx);
    if (!result.ok) {
      log.info(
        { status: result.res.status, attempts: result.attempts, retries: result.retries },
        'provider refused',
      );
      await recordSafely(() =>
        binding.recordResponse({
          status: result.res.status,
          ok: false,
          error: result.bodyText.slice(0, 2000),
          attempts: result.attempts,
          retries: result.retries,
        }),
      );
      deliverFailure(res, result);
      return;
    }
    let outcome;
    try {
      outcome = await deliverSuccess(res, result.res, adapter, abort.signal, (o) =>
        recordSafely(() =>
          binding.recordResponse({
            status: result.res.status,
            ok: o.complete,
            attempts: result.attempts,
            retries: result.retries,
            response: o.response,
            error: o.complete ? undefined : `${o.streamed ? 'stream' : 'answer'} ended before completion`,
          }),
        ),
      );
    } catch (e) {
      const err = e instanceof UpstreamError ? e : undefined;
      if (!err) throw e;
      if (err.code === 'aborted') return;
      throw upstreamFailure(err, provider.config.name);
    }
    log.info(
      {
        status: result.res.status,
        attempts: result.attempts,
        latencyMs: Math.round(app.clock.now() - startedAt),
        streamed: outcome.streamed,
      },
      'model call done',
    );
  };

  /** The answer is worth more than its log line: a failed append is logged, never thrown at the client. */
  async function recordSafely(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      app.logger.error({ err }, 'could not append the response to the chat log');
    }
  }
}

function setEffectHeaders(res: Response, ctx: CallContext): void {
  if (ctx.effects.trimmed > 0) res.setHeader('x-oda-trimmed', String(ctx.effects.trimmed));
  if (ctx.effects.imagesSetAside > 0)
    res.setHeader('x-oda-images-set-aside', String(ctx.effects.imagesSetAside));
  if (ctx.effects.pruned)
    res.setHeader('x-oda-pruned', `soft=${ctx.effects.pruned.soft},cleared=${ctx.effects.pruned.cleared}`);
}

function recordEffectMetrics(app: AppContext, ctx: CallContext): void {
  const e = ctx.effects;
  if (e.trimmed) app.metrics.trimmedResults.inc(e.trimmed);
  if (e.trimmedChars) app.metrics.trimmedChars.inc(e.trimmedChars);
  if (e.imagesSetAside) app.metrics.imagesSetAside.inc(e.imagesSetAside);
  if (e.imageRounds) app.metrics.imageRounds.inc(e.imageRounds);
  if (e.pruned) {
    app.metrics.pruned.inc({ action: 'soft' }, e.pruned.soft);
    app.metrics.pruned.inc({ action: 'cleared' }, e.pruned.cleared);
    app.metrics.prunedChars.inc(e.pruned.charsRemoved);
  }
  if (e.imageReplay.imagesRemoved)
    app.metrics.imageReplayRemoved.inc({ kind: 'image' }, e.imageReplay.imagesRemoved);
  if (e.imageReplay.referencesRemoved)
    app.metrics.imageReplayRemoved.inc({ kind: 'reference' }, e.imageReplay.referencesRemoved);
}
