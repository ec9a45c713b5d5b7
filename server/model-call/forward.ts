/**
 * Stage 5 of a model call: send the request as the pipeline left it to the provider, through the
 * repair loop (transport retries on a budget; image set-aside and overflow trimming without one).
 */
import { outgoingBody, type CallContext } from '../../middleware/call-context.ts';
import { runRepairLoop, type RepairLoopResult } from '../../middleware/repair-loop.ts';
import { buildRepairs } from '../../middleware/repairs.ts';
import { buildUpstreamUrl, forwardedQuery } from '../../providers/upstream-url.ts';
import type { AppContext } from '../app-context.ts';
import { upstreamHeaders } from '../upstream-headers.ts';
import { peekStreamStart } from './peek-stream.ts';
import type { ModelCall } from './read-call.ts';

/** URLs built per provider config: the same base URL, path and query always build the same URL. */
const builtUrls = new WeakMap<object, Map<string, string>>();

/** `buildUpstreamUrl`, built (and its origin checked) once per provider, path and query. */
function upstreamUrl(
  config: { readonly baseUrl: string },
  apiPath: string,
  query: Readonly<Record<string, string>>,
): string {
  let urls = builtUrls.get(config);
  if (!urls) builtUrls.set(config, (urls = new Map()));
  const key = `${apiPath}?${JSON.stringify(query)}`;
  let url = urls.get(key);
  if (url === undefined) {
    url = buildUpstreamUrl(config.baseUrl, apiPath, query);
    urls.set(key, url);
  }
  return url;
}

/** Attempts and retries so far, kept up to date also when the loop throws. */
export interface ForwardProgress {
  attempts: number;
  retries: number;
}

/** Runs the repair loop; throws an UpstreamError when the provider could not be reached. */
export async function forward(
  app: AppContext,
  call: ModelCall,
  ctx: CallContext,
  progress: ForwardProgress,
): Promise<RepairLoopResult> {
  const { provider, adapter } = call;
  const url = upstreamUrl(
    provider.config,
    adapter.apiPath(call.route.path),
    forwardedQuery(call.query, call.route.query ?? {}),
  );
  const headers = upstreamHeaders(
    call.headers,
    adapter,
    provider.config.apiKey,
    app.passThroughCredentials,
    provider.config.anthropicBetas,
  );
  return runRepairLoop({
    progress,
    send: async () => {
      const { body, length } = outgoingBody(ctx);
      const started = performance.now();
      let r;
      try {
        r = await app.upstream.send({
          url,
          headers: { ...headers, 'content-length': String(length) },
          body,
          signal: call.abort.signal,
        });
      } catch (e) {
        // A provider slow to fail is seen too, apart from the answers.
        const outcome = call.abort.signal.aborted ? 'aborted' : 'failed';
        app.metrics.observeUpstream(provider.config.name, outcome, started);
        throw e;
      }
      app.metrics.observeUpstream(provider.config.name, 'answered', started);
      return peekStreamStart(adapter, r);
    },
    classify: (status, text) => adapter.classifyRefusal(status, text, ctx.view.images().length),
    repairs: buildRepairs(ctx),
    retries: app.config.retries,
    sleep: app.sleep,
    signal: call.abort.signal,
    now: () => app.clock.now(),
    random: app.random,
    onRetry: (reason, delayMs) => call.log.warn({ reason, delayMs }, 'retrying upstream call'),
    // Counted once made: a client gone during the wait takes its retry with it.
    onRetried: (reason) =>
      app.metrics.retries.inc({
        reason: reason.split(':')[0] === 'status' ? reason : reason.split(':')[0]!,
      }),
    onRepair: (kind) => app.metrics.repairs.inc({ kind }),
  });
}
