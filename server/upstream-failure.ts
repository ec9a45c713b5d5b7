import { OdaError } from '../lib/errors.ts';
import type { UpstreamError } from '../providers/upstream-client.ts';

/**
 * The gateway's answer when the provider could not be reached or broke off: 504 on a timeout, else
 * 502 (also for a body longer than the gateway reads whole). Not retried by the gateway past its
 * budget, but a retry may well succeed, so the client is not told to stop (SPEC section 3).
 * `answered`: the status of an answer the provider had begun (its headers came) when its body
 * could not be read whole, so the message says it broke off rather than that it was unreachable.
 */
export function upstreamFailure(err: UpstreamError, providerName: string, answered?: number): OdaError {
  const opts = { cause: err };
  if (err.code === 'too-large')
    return new OdaError(
      'ODA_ERR_UPSTREAM_TOO_LARGE',
      502,
      `provider "${providerName}" answered more than the gateway reads: ${err.message}`,
      opts,
    );
  if (err.code === 'encoding')
    return new OdaError(
      'ODA_ERR_UPSTREAM_UNREACHABLE',
      502,
      `provider "${providerName}" answered in a form the gateway cannot read: ${err.message}`,
      opts,
    );
  if (answered !== undefined && (err.code === 'timeout' || err.code === 'reset'))
    return err.code === 'timeout'
      ? new OdaError(
          'ODA_ERR_UPSTREAM_TIMEOUT',
          504,
          `provider "${providerName}" went silent in the middle of its answer (HTTP ${answered}): ${err.message}`,
          opts,
        )
      : new OdaError(
          'ODA_ERR_UPSTREAM_UNREACHABLE',
          502,
          `provider "${providerName}" broke off its answer (HTTP ${answered}) before it was whole: ${err.message}`,
          opts,
        );
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
