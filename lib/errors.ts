/** Stable error codes of the gateway; `server/error-handler.ts` renders them in the endpoint's format. */
export type OdaErrorCode =
  | 'ODA_ERR_BAD_JSON'
  | 'ODA_ERR_INVALID_REQUEST'
  | 'ODA_ERR_BODY_TOO_LARGE'
  | 'ODA_ERR_NOT_FOUND'
  | 'ODA_ERR_NO_PROVIDER'
  | 'ODA_ERR_UNAUTHORIZED'
  | 'ODA_ERR_FORBIDDEN'
  | 'ODA_ERR_RATE_LIMITED'
  | 'ODA_ERR_TOO_MANY_CALLS'
  | 'ODA_ERR_UNSUPPORTED_MEDIA_TYPE'
  | 'ODA_ERR_BODY_TIMEOUT'
  | 'ODA_ERR_UPSTREAM_UNREACHABLE'
  | 'ODA_ERR_UPSTREAM_TIMEOUT'
  | 'ODA_ERR_UPSTREAM_TOO_LARGE'
  | 'ODA_ERR_LOG_WRITE'
  | 'ODA_ERR_LOG_READ'
  | 'ODA_ERR_STORE_UNAVAILABLE'
  | 'ODA_ERR_CONFIG'
  | 'ODA_ERR_SHUTTING_DOWN'
  | 'ODA_ERR_WEBSOCKET_UNSUPPORTED'
  | 'ODA_ERR_INTERNAL';

/** The kind of error, mapped to each wire format's error `type`. */
export type OdaErrorKind =
  | 'invalid_request'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'request_too_large'
  | 'rate_limit'
  | 'api_error'
  | 'overloaded'
  | 'timeout';

/** One error family: every error the gateway raises on purpose. */
export class OdaError extends Error {
  readonly code: OdaErrorCode;
  readonly status: number;
  readonly kind: OdaErrorKind;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(
    code: OdaErrorCode,
    status: number,
    message: string,
    opts: {
      kind?: OdaErrorKind;
      param?: string | null;
      cause?: unknown;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'OdaError';
    this.code = code;
    this.status = status;
    this.kind = opts.kind ?? kindForStatus(status);
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }
}

function kindForStatus(status: number): OdaErrorKind {
  if (status === 401) return 'authentication';
  if (status === 403) return 'permission';
  if (status === 404) return 'not_found';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit';
  if (status === 503) return 'overloaded';
  if (status === 504) return 'timeout';
  if (status >= 500) return 'api_error';
  return 'invalid_request';
}

export const isOdaError = (e: unknown): e is OdaError => e instanceof OdaError;
