/** Edge checks of a model call's body, shared by the formats: a model, and the conversation's list. */
import { z } from 'zod';
import { OdaError } from '../lib/errors.ts';

const model = z.string({ error: 'model must be a string' }).min(1, 'model must not be empty');

/**
 * An array, its elements unread: `z.array(z.unknown())` walks every element and builds a copy of
 * the list (a long chat's thousand messages, some 70 KB of garbage per request) to say the same.
 */
const list = (error: string) => z.custom<unknown[]>((v) => Array.isArray(v), { error });

/** Chat Completions and Messages: `model` and a `messages` array. */
const messagesBody = z.looseObject({
  model,
  messages: list('messages must be an array'),
});

/**
 * Responses: `model`, and `input` when present, a string or a list of items. `input` is optional
 * in the API: a request may take its input from a `prompt` template or send nothing new after a
 * `previous_response_id`. https://platform.openai.com/docs/api-reference/responses/create
 */
const inputBody = z.looseObject({
  model,
  input: z
    .union([z.string(), list('input must be a string or an array')], {
      error: 'input must be a string or an array',
    })
    .optional(),
});

/** Parses `body` with `shape`; a 400 naming the first bad field otherwise. */
function parseWith(
  shape: typeof messagesBody | typeof inputBody,
  body: Record<string, unknown>,
): { model: string } {
  const parsed = shape.safeParse(body);
  if (parsed.success) return { model: parsed.data.model };
  const issue = parsed.error.issues[0]!;
  throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, issue.message, { param: issue.path.join('.') || null });
}

/** A Chat Completions or Messages body: its model; a 400 naming `model` or `messages` otherwise. */
export function parseMessagesBody(body: Record<string, unknown>): { model: string } {
  return parseWith(messagesBody, body);
}

/**
 * A Responses body: its model; a 400 naming `model` (left out, as a prompt template allows, or
 * not a string), or `input` when it has another type or when a Chat Completions body
 * (`messages`, no `input`) was sent to the Responses endpoint.
 */
export function parseInputBody(body: Record<string, unknown>): { model: string } {
  // The API lets a request leave `model` out and take it from a `prompt` template stored at
  // OpenAI; the gateway picks the provider (and the model's limits) by `model` before sending, so
  // it says so instead of "model must be a string".
  if (body.model === undefined || body.model === null) {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      body.prompt !== undefined && body.prompt !== null
        ? 'model is required: the gateway chooses the provider by model and cannot read the model of a prompt template, so name it in the request'
        : 'model is required: the gateway chooses the provider by model',
      { param: 'model' },
    );
  }
  const parsed = parseWith(inputBody, body);
  if (body.input === undefined && body.messages !== undefined) {
    throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'input must be a string or an array', {
      param: 'input',
    });
  }
  return parsed;
}
