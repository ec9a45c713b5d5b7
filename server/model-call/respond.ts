/**
 * Stage 6 of a model call: answer the client and log the answer. A success is delivered (streamed
 * or whole) and logged before its last byte goes out; a refusal goes back as the provider sent it;
 * an unreachable provider is the gateway's 502/504. Effect headers and `x-oda-attempts` go on every
 * answer.
 */
import type { Response } from 'express';
import type { CallContext } from '../../middleware/call-context.ts';
import type { RepairLoopResult } from '../../middleware/repair-loop.ts';
import { UpstreamError } from '../../providers/upstream-client.ts';
import type { AppContext } from '../app-context.ts';
import type { CutReason } from '../cut-short.ts';
import type { ChatBinding, ResponseRecord } from '../chat-binder.ts';
import { deliverFailure, deliverSuccess, type DeliveryOutcome } from '../deliver.ts';
import { markLogged, toOdaError } from '../error-handler.ts';
import { upstreamFailure } from '../upstream-failure.ts';
import { accountAnswer, loggedMechanisms, usageStep } from '../usage-accounting.ts';
import type { ForwardProgress } from './forward.ts';
import type { ModelCall } from './read-call.ts';
import { recordLoggedOwners, recordOwnerSafely } from './record-response-owners.ts';
import type { RecordStep } from '../unrecorded-answers.ts';

/** Answers a call whose repair loop returned. */
export async function respond(
  app: AppContext,
  call: ModelCall,
  ctx: CallContext,
  binding: ChatBinding,
  res: Response,
  result: RepairLoopResult,
): Promise<void> {
  reportEffects(app, res, ctx, result.attempts);
  if (!result.ok) {
    call.log.info(
      {
        status: result.res.status,
        attempts: result.attempts,
        retries: result.retries,
        ...(result.gaveUp ? { gaveUp: result.gaveUp.reason } : {}),
        ...(result.gaveUp?.reason === 'retry-delay-too-long'
          ? { askedDelayMs: result.gaveUp.askedDelayMs, maxDelayMs: app.config.retries.maxDelayMs }
          : {}),
      },
      'provider refused',
    );
    if (result.gaveUp) app.metrics.retriesGivenUp.inc({ reason: result.gaveUp.reason });
    await recordSafely(app, call, ctx, binding, {
      status: result.res.status,
      ok: false,
      error: result.bodyText.slice(0, 2000),
      attempts: result.attempts,
      retries: result.retries,
    });
    deliverFailure(res, result);
    return;
  }
  let outcome;
  try {
    outcome = await deliverSuccess(
      res,
      result.res,
      call.adapter,
      call.abort.signal,
      (o) =>
        recordSafely(
          app,
          call,
          ctx,
          binding,
          {
            status: result.res.status,
            // A stream the provider closed after saying the answer failed, or a 2xx JSON answer
            // that is an error body (or no JSON at all), is a failed answer.
            ok: o.complete && o.failure === undefined,
            attempts: result.attempts,
            retries: result.retries,
            response: o.response,
            error: answerError(
              o.failure ?? (o.complete ? undefined : streamCutError(app, call, o, result.res.status)),
              o.notRecorded,
            ),
          },
          res,
        ),
      // The team reaches its response as soon as it can name it: a background stream is
      // retrieved or cancelled while it runs, long before its answer is logged.
      call.adapter.storesResponses ? (id) => recordOwnerSafely(app, call, id, binding.chatId) : undefined,
      app.maxRecordedStreamChars,
      // The usage the gateway asked for, not the client: the log reads it, the client never sees it.
      ctx.effects.streamUsageAdded ? call.adapter.isUsageOnlyEvent : undefined,
    );
  } catch (e) {
    if (!(e instanceof UpstreamError)) throw e;
    // A JSON answer that could not be read whole: none of it went out, the client gets the
    // gateway's error (or nothing, when it left), and the log says so.
    return failCall(app, call, ctx, binding, res, e, result, result.res.status);
  }
  const fields = {
    status: result.res.status,
    attempts: result.attempts,
    streamed: outcome.streamed,
    // The provider said the answer failed, inside its 2xx (an error event or chunk, a failed
    // response, an error body): the line says so, not only the chat log.
    ...(outcome.failure !== undefined ? { failure: outcome.failure.slice(0, 2000) } : {}),
    // The stream went out, but its answer is too large for the log: the line and a metric say so.
    ...(outcome.notRecorded !== undefined ? { notRecorded: outcome.notRecorded } : {}),
  };
  if (outcome.notRecorded !== undefined) app.metrics.answersUnrecorded.inc({ reason: 'too-large' });
  // A stream the provider failed inside (its error event or chunk, `response.failed`) is an answer
  // cut short by the provider, also when the stream then closed as it should.
  if (!outcome.complete || outcome.cutBy !== undefined) {
    const broken = outcome.brokenBy && brokenOff(call, outcome.brokenBy, result.res.status);
    logCutShort(
      app,
      call,
      { ...fields, ...(broken ? { code: broken.code, error: broken.message } : {}) },
      outcome.cutBy,
    );
    return;
  }
  call.log[outcome.failure === undefined && outcome.notRecorded === undefined ? 'info' : 'warn'](
    { ...fields, latencyMs: Math.round(app.clock.now() - call.startedAt) },
    'model call done',
  );
}

/** The chat log's error of an answer: why it failed, and why it is not recorded, when it is not. */
function answerError(failed: string | undefined, notRecorded: string | undefined): string | undefined {
  const error =
    failed !== undefined && notRecorded !== undefined ? `${failed}; ${notRecorded}` : (failed ?? notRecorded);
  return error?.slice(0, 2000);
}

/** Why a call's answer did not reach its client whole: the client left, the shutdown, or the provider. */
function cutBy(app: AppContext, call: ModelCall): CutReason {
  if (!call.abort.signal.aborted) return 'upstream';
  return app.drain.cutting ? 'shutdown' : 'client';
}

/** The gateway's error for a provider stream broken off after its status went out (a 502 or 504's message). */
function brokenOff(call: ModelCall, err: UpstreamError, status: number) {
  return upstreamFailure(err, call.provider.config.name, status);
}

/**
 * The error of a stream's failed response in the chat log: it ended before completion, and why
 * when the gateway knows (the provider's connection broke or went silent past `timeouts.idleMs`,
 * the client went away, the shutdown grace period ended); a provider that closed its stream early
 * gives no why.
 */
function streamCutError(app: AppContext, call: ModelCall, o: DeliveryOutcome, status: number): string {
  const base = 'stream ended before completion';
  if (o.brokenBy) return `${base}: ${brokenOff(call, o.brokenBy, status).message}`;
  const by = cutBy(app, call);
  if (by === 'client') return `${base}: the client went away`;
  if (by === 'shutdown') return `${base}: the gateway's shutdown grace period ended`;
  return base;
}

/**
 * Logs a call whose answer never reached its client whole: why (`cutBy`: the client went away, the
 * provider's answer broke off or the provider said in it that it failed, or the shutdown grace
 * period ended), at warn unless the client chose to leave, which clients do every time a user
 * stops an answer. `by`: the provider's reason, when delivery knows it.
 */
function logCutShort(
  app: AppContext,
  call: ModelCall,
  fields: Record<string, unknown>,
  by: CutReason = cutBy(app, call),
): void {
  call.log[by === 'client' ? 'info' : 'warn'](
    { ...fields, latencyMs: Math.round(app.clock.now() - call.startedAt), complete: false, cutBy: by },
    'model call cut short',
  );
}

/** Answers a call whose repair loop threw (provider unreachable, a repair that could not be recorded). */
export async function respondToFailure(
  app: AppContext,
  call: ModelCall,
  ctx: CallContext,
  binding: ChatBinding,
  res: Response,
  error: unknown,
  progress: ForwardProgress,
): Promise<void> {
  // What the mechanisms already did (and recorded) is still reported on the error response.
  reportEffects(app, res, ctx, progress.attempts);
  return failCall(app, call, ctx, binding, res, error, progress);
}

/**
 * Logs a call that failed before any of its answer went out, as what the client gets: the
 * gateway's error status and message (502/504 for the provider, the gateway's own otherwise), or
 * status 0 when the client left first; then throws the error for the error handler to render.
 * `answered`: the provider's status when its answer had begun but could not be read whole.
 */
async function failCall(
  app: AppContext,
  call: ModelCall,
  ctx: CallContext,
  binding: ChatBinding,
  res: Response,
  error: unknown,
  counts: { attempts: number; retries: number },
  answered?: number,
): Promise<void> {
  const err = error instanceof UpstreamError ? error : undefined;
  const aborted = err?.code === 'aborted';
  const failure = err && !aborted ? upstreamFailure(err, call.provider.config.name, answered) : undefined;
  const message = failure?.message ?? (err ? err.message : String(error));
  await recordSafely(app, call, ctx, binding, {
    status: aborted ? 0 : (failure ?? toOdaError(error)).status,
    ok: false,
    error: answered === undefined ? message : `answer ended before completion: ${message}`,
    attempts: counts.attempts,
    retries: counts.retries,
  });
  // A failed repair (e.g. a trim the log could not record) is the gateway's own error, not the provider's.
  if (!err) throw error;
  const upstream =
    answered === undefined ? { answered: false } : { upstreamStatus: answered, streamed: false };
  if (!failure) {
    logCutShort(app, call, { status: 0, attempts: counts.attempts, ...upstream });
    return;
  }
  // A provider answer that broke off closes the call like a stream that broke off, in the call's one
  // line (with its chat), which the error handler does not repeat; an unreachable provider is logged
  // by the error handler.
  if (answered !== undefined) {
    logCutShort(app, call, {
      status: failure.status,
      attempts: counts.attempts,
      ...upstream,
      code: failure.code,
      error: failure.message,
    });
    markLogged(res, failure);
  }
  throw failure;
}

/**
 * Logs the answer. The answer is worth more than its log line: a failed append is never thrown at
 * the client; what could not be recorded (the response, the usage, the owners of its ids) is tried
 * again in the background until the store answers (`UnrecordedAnswers`), so an answer the client
 * got is not lost to a store that was away for a moment. The tokens are counted in the metrics at
 * once, whatever the log does. A response id the provider gave was recorded with its chat and team
 * as soon as the answer named it; when the answer was logged in another chat (a branch), the record
 * follows it, so a later `previous_response_id` continues that chat.
 */
async function recordSafely(
  app: AppContext,
  call: ModelCall,
  ctx: CallContext,
  binding: ChatBinding,
  r: ResponseRecord,
  res?: Response,
): Promise<void> {
  const mechanisms = loggedMechanisms(ctx.effects);
  const answered = r.status >= 200 && r.status < 300;
  // The day of the answer is the day it came, also when the ledger takes it late.
  const at = app.clock.now();
  const counts = answered
    ? accountAnswer(app, call.adapter.format, r.response?.usage, mechanisms)
    : undefined;
  let chatId = binding.chatId;
  const steps: RecordStep[] = [
    {
      what: 'response',
      async run(again) {
        chatId = await binding.recordResponse({ ...r, ...(mechanisms ? { mechanisms } : {}) }, again);
        // Two concurrent answers to one history: the second went to a branch. A whole answer's
        // headers are still unsent, so its x-session-id can say so (a stream's chat was fixed at bind).
        if (chatId !== binding.chatId && res && !res.headersSent) res.setHeader('x-session-id', chatId);
      },
    },
  ];
  if (counts) steps.push(usageStep(app, call.caller.team, at, counts, call.log));
  if (call.adapter.storesResponses)
    steps.push({ what: 'owners', run: () => recordLoggedOwners(app, call, binding.chatId, r, chatId) });
  await app.unrecorded.record({ reqId: ctx.requestId, chatId: binding.chatId }, steps);
}

/** Effect headers, `x-oda-attempts` and the mechanisms' metrics. */
function reportEffects(app: AppContext, res: Response, ctx: CallContext, attempts: number): void {
  const e = ctx.effects;
  if (!res.headersSent) {
    res.setHeader('x-oda-attempts', String(attempts));
    if (e.trimmed > 0) res.setHeader('x-oda-trimmed', String(e.trimmed));
    if (e.imagesSetAside > 0) res.setHeader('x-oda-images-set-aside', String(e.imagesSetAside));
    if (e.pruned) res.setHeader('x-oda-pruned', `soft=${e.pruned.soft},cleared=${e.pruned.cleared}`);
    if (e.promptCaching) res.setHeader('x-oda-prompt-caching', e.promptCaching);
  }
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
