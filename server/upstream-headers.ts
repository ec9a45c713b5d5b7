import type { IncomingHttpHeaders } from 'node:http';
import type { FormatAdapter } from '../providers/provider.ts';
import { globMatch } from '../lib/glob.ts';

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
  // The gateway reads a compressed request body decoded (server/read-body.ts) and sends it so.
  'content-encoding',
  'accept-encoding',
  'cookie',
  'authorization',
  'x-api-key',
  'api-key',
  'expect',
  // A browser's page, never the client program: dropped always (SPEC section 14).
  'origin',
  'referer',
]);

/**
 * With teams, the client headers that reach the provider (SPEC section 14): what the official SDKs,
 * Claude Code and Codex send and providers act on. Everything else stays at the gateway: billing
 * routing (`openai-organization`, `openai-project`), client addresses (`x-forwarded-*`,
 * `forwarded`, `x-real-ip`), browser context (`origin`, `referer`, cookies), tracing, and any other
 * credential (`chatgpt-account-id`, ...), since the call is made with the gateway's key.
 */
const TEAM_ALLOWED = new Set([
  'accept',
  'content-type',
  'user-agent',
  'idempotency-key',
  // Anthropic SDK and Claude Code
  'anthropic-version',
  'anthropic-beta',
  'anthropic-dangerous-direct-browser-access',
  'x-app',
  'x-claude-code-session-id',
  // OpenAI SDK and Codex
  'openai-beta',
  'x-client-request-id',
  'originator',
  'version',
  'session-id',
  'session_id',
  'thread-id',
  'conversation_id',
  'x-openai-subagent',
]);
const TEAM_ALLOWED_PREFIXES = ['x-stainless-', 'x-codex-'];

function teamAllowed(name: string): boolean {
  return TEAM_ALLOWED.has(name) || TEAM_ALLOWED_PREFIXES.some((p) => name.startsWith(p));
}

/**
 * `anthropic-beta` narrowed to the betas a provider allows (`providers[].anthropicBetas`, names or
 * `*` globs); undefined when none is left.
 */
export function narrowAnthropicBetas(
  value: string,
  allowed: readonly string[] | undefined,
): string | undefined {
  if (allowed === undefined) return value;
  const kept = value
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '' && allowed.some((g) => globMatch(g, b, { caseInsensitive: true })));
  return kept.length > 0 ? kept.join(',') : undefined;
}

/**
 * The headers sent upstream. Without teams (`passThrough`): the client's own (anthropic-version,
 * anthropic-beta, x-stainless-*, unknown ones) minus hop-by-hop, browser and gateway headers, and
 * the client's credential when the gateway holds no provider key. With teams: only the allow-list
 * above. The provider key replaces any credential when the gateway holds one. Answers come
 * uncompressed so streams can be observed as they pass.
 */
export function upstreamHeaders(
  incoming: IncomingHttpHeaders,
  adapter: FormatAdapter,
  apiKey: string | undefined,
  passThrough: boolean,
  anthropicBetas?: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined || DROP.has(name) || name.startsWith('x-session-') || name.startsWith('x-oda-'))
      continue;
    if (!passThrough && !teamAllowed(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const beta = out['anthropic-beta'];
  if (beta !== undefined) {
    const narrowed = narrowAnthropicBetas(beta, anthropicBetas);
    if (narrowed === undefined) delete out['anthropic-beta'];
    else out['anthropic-beta'] = narrowed;
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
