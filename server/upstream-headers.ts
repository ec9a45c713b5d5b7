import type { IncomingHttpHeaders } from 'node:http';
import type { FormatAdapter } from '../providers/provider.ts';

/** Headers that belong to one hop, or to the gateway itself, and are never forwarded. */
const DROP = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'accept-encoding',
  'cookie',
  'authorization',
  'x-api-key',
  'api-key',
  'expect',
]);

/**
 * The headers sent upstream: the client's own (anthropic-version, anthropic-beta, x-stainless-*,
 * unknown ones) minus hop-by-hop and gateway headers; the provider key when the gateway holds one,
 * else the client's credential in pass-through mode. Answers come uncompressed so streams can be
 * observed as they pass.
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  adapter: FormatAdapter,
  apiKey: string | undefined,
  passThrough: boolean,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || DROP.has(name) || name.startsWith('x-session-') || name.startsWith('x-oda-'))
      continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  out['content-type'] = 'application/json';
  out['accept-encoding'] = 'identity';
  if (apiKey) {
    Object.assign(out, adapter.authHeaders(apiKey));
  } else if (passThrough) {
    for (const name of adapter.credentialHeaders) {
      const v = incoming[name];
      if (typeof v === 'string') out[name] = v;
    }
  }
  return out;
}
