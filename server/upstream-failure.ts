import { OdaError } from '../lib/errors.ts';
import type { UpstreamError } from '../providers/upstream-client.ts';

/** The gateway's answer when the provider failed it: 504 on a timeout, else 502; never retried. */
export function upstreamFailure(err: UpstreamError, providerName: string): OdaError {
  const opts = { cause: err, headers: { 'x-should-retry': 'false' } };
  return err.code === 'timeout'
    ? new OdaError(
        'ODA_ERR_UPSTREAM_TIMEOUT',
        504,
        `provider "${providerName}" timed out: ${err.message}`,
        opts,
      )
    : new OdaError(
        'ODA_ERR_UPSTREAM_UNREACHABLE',
        502,
        `provider "${providerName}" is unreachable: ${err.message}`,
        opts,
      );
}
