import type { CallContext } from '../call-context.ts';

/**
 * The repair for a provider that refused `stream_options`: takes the `include_usage` the gateway
 * asked for out of the request, in place (the client's `stream_options`, if it sent any, goes as
 * sent), so the client gets its stream untouched again. False when the gateway asked for nothing
 * (a refusal of the client's own stream options goes back to the client as it was).
 *
 * The provider is remembered as refusing the field (later requests to it go without the ask) only
 * when the client sent no stream options of its own: the field the refusal names was then all the
 * gateway's. A refusal of a body that carried the client's options may be about those, and one
 * client's bad options must not cost every later answer of the provider its usage.
 */
export function withdrawStreamUsage(ctx: CallContext): boolean {
  const taken = ctx.view.removeAddedStreamUsage?.();
  if (taken === undefined) return false;
  delete ctx.effects.streamUsageAdded;
  if (taken === 'whole') ctx.streamUsageRefusals.remember(ctx.providerName);
  return true;
}
