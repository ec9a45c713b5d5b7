/**
 * The upstream URL of a model call, built only from the provider's configured `baseUrl` and the
 * route's fixed API path, never from the client's request target. The origin of the result is
 * checked against the `baseUrl`'s before anything is sent, so no request (and no provider key) can
 * be steered to another host by a crafted target, path or query (SPEC section 14).
 */
import { OdaError } from '../lib/errors.ts';

/**
 * Joins `baseUrl` and `apiPath` (which starts with `/`), adds only the `query` parameters given
 * (a list repeats the parameter, as `include[]=a&include[]=b`), and asserts that the result stays
 * on the base URL's origin and under its path.
 */
export function buildUpstreamUrl(
  baseUrl: string,
  apiPath: string,
  query: Readonly<Record<string, string | readonly string[]>> = {},
): string {
  const base = new URL(baseUrl);
  if (!apiPath.startsWith('/') || apiPath.startsWith('//') || /[?#\\]/.test(apiPath)) {
    throw upstreamUrlError(`API path "${apiPath}" is not a plain absolute path`);
  }
  const basePath = base.pathname.replace(/\/+$/, '');
  const url = new URL(base.origin);
  url.pathname = `${basePath}${apiPath}`;
  for (const [k, v] of Object.entries(query)) for (const one of [v].flat()) url.searchParams.append(k, one);
  if (url.origin !== base.origin || !url.pathname.startsWith(`${basePath}/`)) {
    throw upstreamUrlError(`built URL left the provider's base URL ${base.origin}${basePath}`);
  }
  return url.toString();
}

function upstreamUrlError(detail: string): OdaError {
  return new OdaError('ODA_ERR_INTERNAL', 500, `refusing to call the provider: ${detail}`);
}

/** Picks from the client's query only the parameters a route forwards (e.g. `beta=true` on Messages). */
export function forwardedQuery(
  query: Readonly<Record<string, unknown>>,
  allowed: Readonly<Record<string, readonly string[]>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, values] of Object.entries(allowed)) {
    const v = query[name];
    if (typeof v === 'string' && values.includes(v)) out[name] = v;
  }
  return out;
}
