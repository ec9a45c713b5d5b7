/**
 * Refusals of a top-level request field the server does not accept. OpenAI-compatible servers
 * differ in what they take: many ignore a field they do not know, but servers that validate the
 * body strictly refuse it (400, or 422 from FastAPI's validation), and each says so in its own
 * words. The gateway adds `prompt_cache_key` to requests that carry none (SPEC section 11), so it
 * must tell such a refusal of its own field from any other 400.
 *
 * The table holds the wordings seen in public reports, each row with a test
 * (unknown-field-refusal.test.ts). A row matches only where the field itself is named as the
 * refused one, at the top level of the body: a refusal of `messages[0].prompt_cache_key` or of
 * another field is not one of these.
 */
import { isObj } from './wire-json.ts';

export interface UnknownFieldRow {
  /** Where the wording was seen, for the test table. */
  seenFrom: string;
  /** The message pattern for `field` (regex-escaped). */
  pattern(field: string): RegExp;
}

/** Messages that name a top-level field as unknown, unsupported or extra. */
export const UNKNOWN_FIELD_ROWS: readonly UnknownFieldRow[] = [
  {
    // {"error":{"message":"Unknown parameter: 'reasoning'.","param":"reasoning","code":"unknown_parameter"}}
    seenFrom: 'OpenAI (code unknown_parameter)',
    pattern: (f) => new RegExp(`\\bUnknown parameter: '${f}'`, 'i'),
  },
  {
    // "Unsupported parameter: 'temperature' is not supported with this model." (code unsupported_parameter)
    seenFrom: 'OpenAI, Azure OpenAI (code unsupported_parameter)',
    pattern: (f) => new RegExp(`\\bUnsupported parameter: '${f}'`, 'i'),
  },
  {
    // "Unrecognized request argument supplied: prompt_cache_key" (a list when there are several)
    seenFrom: 'OpenAI (older API versions), Azure-hosted OpenAI-compatible endpoints',
    pattern: (f) =>
      new RegExp(`\\bUnrecognized request arguments? supplied: (?:[\\w.-]+, ?)*${f}(?![\\w.])`, 'i'),
  },
  {
    // 'Invalid JSON payload received. Unknown name "google": Cannot find field.' A nested field
    // says where it is (`Unknown name "x" at 'tools[0]...'`), a top-level one does not.
    seenFrom: 'Google APIs (the Gemini API, its OpenAI-compatible endpoint included)',
    pattern: (f) => new RegExp(`\\bUnknown name "${f}": Cannot find field`, 'i'),
  },
  {
    // "[{'type': 'extra_forbidden', 'loc': ('body', 'max_completion_tokens'), 'msg': 'Extra inputs
    // are not permitted', 'input': 800}]": Pydantic's errors as Python text inside the message.
    seenFrom: 'Pydantic-based servers that quote the validation errors (vLLM-style BadRequestError)',
    pattern: (f) => new RegExp(`'extra_forbidden', 'loc': \\('body', '${f}'\\)`),
  },
  {
    // "Extra inputs are not permitted, field: 'promptCacheKey', value: '...'"
    seenFrom: 'hosted OpenAI-compatible APIs that name the extra field',
    pattern: (f) => new RegExp(`\\bExtra inputs are not permitted, field: '${f}'`, 'i'),
  },
  {
    // "Failed to deserialize the JSON body into the target type: unknown field `x`, expected one of ..."
    seenFrom: 'Rust servers that deny unknown fields (serde wording)',
    pattern: (f) => new RegExp(`(?:^|type: )unknown field \`${f}\``, 'i'),
  },
];

/** Pydantic's types for a field the model forbids (v2 `extra_forbidden`, v1 `value_error.extra`). */
const EXTRA_TYPES: ReadonlySet<string> = new Set(['extra_forbidden', 'value_error.extra']);
const EXTRA_MESSAGE = /^(?:extra inputs are not permitted|extra fields not permitted)$/i;

/** OpenAI's codes for a parameter the API does not take (with the parameter in `param`). */
const PARAM_CODES: ReadonlySet<string> = new Set(['unknown_parameter', 'unsupported_parameter']);

/** Deepest nesting searched: error bodies are shallow; a deeper value is not an error's. */
const MAX_DEPTH = 8;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const patternsByField = new Map<string, readonly RegExp[]>();

function patternsFor(field: string): readonly RegExp[] {
  let patterns = patternsByField.get(field);
  if (!patterns) {
    patterns = UNKNOWN_FIELD_ROWS.map((row) => row.pattern(escape(field)));
    patternsByField.set(field, patterns);
  }
  return patterns;
}

/**
 * One error entry that names `field` structurally: Pydantic's `{"type":"extra_forbidden",
 * "loc":["body","<field>"],"msg":"Extra inputs are not permitted"}` (FastAPI answers a list of
 * them under `detail`, some hosts nest it deeper), or OpenAI's `{"param":"<field>","code":"unknown_parameter"}`.
 */
function namesFieldStructurally(entry: Record<string, unknown>, field: string): boolean {
  const loc = entry.loc;
  if (
    Array.isArray(loc) &&
    loc[loc.length - 1] === field &&
    (loc.length === 1 || (loc.length === 2 && loc[0] === 'body'))
  ) {
    const type = typeof entry.type === 'string' ? entry.type : '';
    const msg = typeof entry.msg === 'string' ? entry.msg : '';
    if (EXTRA_TYPES.has(type) || EXTRA_MESSAGE.test(msg)) return true;
  }
  return entry.param === field && typeof entry.code === 'string' && PARAM_CODES.has(entry.code);
}

function namesField(value: unknown, field: string, patterns: readonly RegExp[], depth: number): boolean {
  if (typeof value === 'string') return value.includes(field) && patterns.some((p) => p.test(value));
  if (depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) return value.some((v) => namesField(v, field, patterns, depth + 1));
  if (!isObj(value)) return false;
  if (namesFieldStructurally(value, field)) return true;
  return Object.values(value).some((v) => namesField(v, field, patterns, depth + 1));
}

/**
 * True when a refusal (400 or 422) says the server does not accept the top-level body field
 * `field`: as an unknown parameter, an unsupported one or an extra input, in any of the wordings
 * of UNKNOWN_FIELD_ROWS or Pydantic's and OpenAI's structured error entries. The body may be JSON
 * (any shape: an object, Gemini's array, FastAPI's `detail` list) or plain text.
 */
export function refusesField(status: number, bodyText: string, field: string): boolean {
  if (status !== 400 && status !== 422) return false;
  // Cheap first: a refusal that does not name the field at all is none of these.
  if (!bodyText.includes(field)) return false;
  const patterns = patternsFor(field);
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    return patterns.some((p) => p.test(bodyText));
  }
  return namesField(parsed, field, patterns, 0);
}
