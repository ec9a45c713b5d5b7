/**
 * How servers that validate request bodies strictly refuse a top-level field they do not know, for
 * the fake provider's `refusesFields` option. Many OpenAI-compatible servers ignore an unknown
 * field; these do not. The shapes follow public issue reports (the wording each kind of server uses,
 * seen for other field names than the one a test asks about); they are not any vendor's exact
 * bytes for `prompt_cache_key`.
 */
import type { FakeReply } from './fake-provider.ts';

export type UnknownFieldStyle =
  /**
   * Python servers built on FastAPI and Pydantic with extra fields forbidden: 422 with FastAPI's
   * validation `detail` list (`type: extra_forbidden`, `loc: ["body", field]`).
   */
  | 'fastapi'
  /**
   * Google APIs, the Gemini API's OpenAI-compatible endpoint among them: 400 with a JSON array
   * holding one `INVALID_ARGUMENT` error, `Unknown name "<field>": Cannot find field.`
   */
  | 'google'
  /** OpenAI's own API: 400 `Unknown parameter: '<field>'.` with `param` and code `unknown_parameter`. */
  | 'openai'
  /**
   * OpenAI's older wording, which Azure-hosted OpenAI-compatible endpoints still use: 400
   * `Unrecognized request argument supplied: <field>` (the envelope here is OpenAI's).
   */
  | 'unrecognized-argument';

/** The refusal of the top-level `field` (whose value was `value`), as a server of `style` answers it. */
export function unknownFieldRefusal(style: UnknownFieldStyle, field: string, value: unknown): FakeReply {
  switch (style) {
    case 'fastapi':
      return {
        status: 422,
        json: {
          detail: [
            {
              type: 'extra_forbidden',
              loc: ['body', field],
              msg: 'Extra inputs are not permitted',
              input: value,
            },
          ],
        },
      };
    case 'google': {
      const message = `Invalid JSON payload received. Unknown name "${field}": Cannot find field.`;
      return {
        status: 400,
        json: [
          {
            error: {
              code: 400,
              message,
              status: 'INVALID_ARGUMENT',
              details: [
                {
                  '@type': 'type.googleapis.com/google.rpc.BadRequest',
                  fieldViolations: [{ description: message }],
                },
              ],
            },
          },
        ],
      };
    }
    case 'openai':
      return {
        status: 400,
        json: {
          error: {
            message: `Unknown parameter: '${field}'.`,
            type: 'invalid_request_error',
            param: field,
            code: 'unknown_parameter',
          },
        },
      };
    case 'unrecognized-argument':
      return {
        status: 400,
        json: {
          error: {
            message: `Unrecognized request argument supplied: ${field}`,
            type: 'invalid_request_error',
            param: null,
            code: null,
          },
        },
      };
  }
}
