import type { PipelineStep } from '../call-context.ts';
import {
  applyProjection,
  prunePass,
  pruningGate,
  resolvePruningSettings,
  isPruningOffOverride,
} from './index.ts';

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Cache-TTL pruning (SPEC section 4). The chat's recorded projection is replayed on every request
 * (sticky: the same bytes until the next pass, so the cache prefix written after a pass is reused);
 * a new pass runs only once the chat's prompt cache has gone cold (or was never warmed), and is
 * recorded only when it changed what the model receives, which is also when the clock moves.
 * `x-oda-pruning: off` turns pruning, replay included, off for one request.
 */
export const cacheTtlPruningStep: PipelineStep = {
  name: 'cache-ttl-pruning',
  async run(ctx) {
    const override = header(ctx.headers['x-oda-pruning']);
    if (isPruningOffOverride(override)) return;
    const settings = resolvePruningSettings(
      ctx.config.pruning,
      ctx.adapter.prunesByDefault,
      ctx.view.cacheTtlHint(),
      override,
    );
    const replayed = applyProjection(ctx.view, ctx.decisions.projection, settings);
    const gate = pruningGate({
      mode: settings.mode,
      ttlMs: settings.ttlMs,
      lastCacheTouchAt: ctx.lastCacheTouchAt,
      now: ctx.startedAt,
    });
    if (!gate.open || ctx.contextWindow === undefined) return;
    const pass = prunePass(ctx.view, settings, ctx.contextWindow, replayed);
    if (!pass.changed) return;
    await ctx.record([
      {
        type: 'pruning',
        requestId: ctx.requestId,
        projection: pass.projection,
        soft: pass.soft,
        cleared: pass.cleared,
        charsRemoved: pass.charsRemoved,
        estimateBefore: pass.estimateBefore,
        estimateAfter: pass.estimateAfter,
        changed: true,
      },
    ]);
    ctx.effects.pruned = { soft: pass.soft, cleared: pass.cleared, charsRemoved: pass.charsRemoved };
  },
};
