/**
 * The answers of background responses (`background: true`, not streamed), logged when they are
 * retrieved. Such a call is answered `queued` with no output: its chat logged a response event
 * saying so and nothing else. The answer is made later, at the provider, and reaches the client
 * through `GET /v1/responses/{id}`, as JSON or streamed (`?stream=true`, whose closing event carries
 * the whole response); the first retrieve that finds it finished (completed, failed, cancelled,
 * incomplete) records it in the chat of the queued call as that call's answer would have
 * been: the model messages right after the history it answers (a branch when the chat went on
 * differently), a response event with its outcome and usage, the usage in the team's ledger, and
 * the owners of its output items. The response event with the response id and a finished outcome is
 * the marker that it is logged: it is looked for under the chat's lock (shared by replicas on
 * Redis), so later retrieves, on any replica, record nothing more.
 * @see https://platform.openai.com/docs/guides/background
 */
import type { ChatLog } from '../chat-log/chat-log.ts';
import type { ResponseOwner } from '../chat-log/response-owners.ts';
import type { Counts } from '../chat-log/usage-ledger.ts';
import type { ProviderConfig } from '../config/config.ts';
import { FORMATS } from '../providers/registry.ts';
import { MAX_WHOLE_ANSWER_BYTES } from '../providers/upstream-client.ts';
import type { AppContext } from './app-context.ts';
import { recordAnswer, type ResponseEvent } from './chat-binder-binding.ts';
import type { ResponseRecord } from './chat-binder.ts';
import { recordLoggedOwners, type OwnedAnswer } from './model-call/record-response-owners.ts';
import type { EventObserver } from './observed-body.ts';
import type { RecordStep } from './unrecorded-answers.ts';
import { accountAnswer, usageStep } from './usage-accounting.ts';

/** The statuses of a background response still running; any other is its outcome. */
const RUNNING = new Set(['queued', 'in_progress']);

/** The outcomes whose answer is logged as a failed one (`ok: false`). */
const FAILED = new Set(['failed', 'cancelled']);

/** The events that close a Responses stream, each carrying the whole response. */
const CLOSING_NAMES = ['response.completed', 'response.failed', 'response.incomplete'];
const CLOSING = new Set(CLOSING_NAMES);

/** Events read at once while looking for the queued call, newest first. */
const SCAN_EVENTS = 256;

function isObj(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** True when a response event says the answer of `responseId` is logged (not still running). */
function answerLogged(e: ResponseEvent, responseId: string): boolean {
  return e.responseId === responseId && !RUNNING.has(e.stopReason ?? '');
}

/**
 * The queued call of `responseId` in `chatId` (its response event, and where its answer goes among
 * the chat's messages), `logged` when its answer is logged already, or undefined when the chat holds
 * no running response of that id. Read from the end: the queued call is usually near it.
 */
async function queuedCall(
  chatLog: ChatLog,
  chatId: string,
  responseId: string,
): Promise<{ event: ResponseEvent; answerAt: number; team: string | undefined } | 'logged' | undefined> {
  const state = await chatLog.open(chatId);
  if (!state) return undefined;
  for (let end = state.count; end > 0;) {
    const from = Math.max(0, end - SCAN_EVENTS);
    const events = await chatLog.read(chatId, from, end - from);
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i]!;
      if (e.type !== 'response' || e.responseId !== responseId) continue;
      if (answerLogged(e, responseId)) return 'logged';
      const answerAt = state.messages.messages.filter((m) => m.seq < e.seq).length;
      return { event: e, answerAt, team: state.header.team };
    }
    end = from;
  }
  return undefined;
}

/**
 * Records the answer of a retrieved background response (the JSON `text` the provider sent for
 * `GET /v1/responses/{id}`) in the chat of its queued call, once; nothing when it is still running,
 * is no background response, or is logged already. Never throws: the client's answer is worth more
 * than its record (what the store could not take waits in `app.unrecorded`).
 */
export async function recordBackgroundAnswer(
  app: AppContext,
  owner: ResponseOwner,
  provider: ProviderConfig,
  text: string,
  reqId: unknown,
): Promise<void> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return;
  }
  await recordFinished(app, owner, provider, json, reqId);
}

/**
 * The observer of a streamed retrieve (`GET /v1/responses/{id}?stream=true`, from the start or
 * `starting_after` an event): the stream's closing event (`response.completed`, `response.failed`,
 * `response.incomplete`) carries the whole response, whose answer is recorded from it as the JSON
 * retrieve's is (the same once, the same marker). Other events are passed over unread.
 */
export function backgroundStreamObserver(
  app: AppContext,
  owner: ResponseOwner,
  provider: ProviderConfig,
  reqId: unknown,
): EventObserver {
  let seen = false;
  return (event, data) => {
    if (seen || data.length > MAX_WHOLE_ANSWER_BYTES) return undefined;
    // The API names each event; a server that does not is read for the closing types' names.
    if (event !== undefined ? !CLOSING.has(event) : !CLOSING_NAMES.some((t) => data.includes(t))) {
      return undefined;
    }
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      return undefined;
    }
    if (!isObj(json) || typeof json.type !== 'string' || !CLOSING.has(json.type)) return undefined;
    seen = true;
    return recordFinished(app, owner, provider, json.response, reqId);
  };
}

/** Records `json`, a background response the provider gave finished, as `recordBackgroundAnswer` says. */
async function recordFinished(
  app: AppContext,
  owner: ResponseOwner,
  provider: ProviderConfig,
  json: unknown,
  reqId: unknown,
): Promise<void> {
  const log = app.logger.child({ reqId, provider: provider.name, chatId: owner.chatId });
  try {
    if (!isObj(json) || json.background !== true || typeof json.id !== 'string') return;
    const status = typeof json.status === 'string' ? json.status : undefined;
    if (status === undefined || RUNNING.has(status)) return;
    const responseId = json.id;
    const queued = await queuedCall(app.chatLog, owner.chatId, responseId);
    if (queued === undefined || queued === 'logged') return;
    const response = FORMATS.responses.normalizeResponse(json);
    const failed = FAILED.has(status);
    const error =
      isObj(json.error) && typeof json.error.message === 'string' ? json.error.message : undefined;
    const r: ResponseRecord = {
      status: 200,
      ok: !failed,
      attempts: queued.event.attempts,
      retries: 0,
      response,
      ...(failed ? { error: (error ?? `background response ${status}`).slice(0, 2000) } : {}),
    };
    const at = app.clock.now();
    const who: OwnedAnswer = { caller: { team: owner.team }, provider: { config: provider }, log };
    // Set when another retrieve (on this replica or another) logged the answer first.
    let loggedElsewhere = false;
    let chatId = owner.chatId;
    let counts: Counts | undefined;
    const steps: RecordStep[] = [
      {
        what: 'response',
        async run(again) {
          loggedElsewhere = false;
          chatId = await recordAnswer(
            app.chatLog,
            app.clock,
            owner.chatId,
            queued.event,
            queued.answerAt,
            queued.team,
            r,
            (e) => {
              if (!answerLogged(e, responseId)) return false;
              // After a failed try, the answer found is taken as this retrieve's own (the store
              // took it and its reply was lost): its usage and owners are still to record.
              if (!again) loggedElsewhere = true;
              return true;
            },
          );
        },
      },
      {
        what: 'usage',
        async run(again) {
          if (loggedElsewhere) return;
          // The call's answer was counted when it was queued; its tokens are counted now.
          counts ??= { ...accountAnswer(app, 'responses', response.usage, undefined), answers: 0 };
          await usageStep(app, owner.team, at, counts, log).run(again);
        },
      },
      {
        what: 'owners',
        run: () =>
          loggedElsewhere ? Promise.resolve() : recordLoggedOwners(app, who, owner.chatId, r, chatId),
      },
    ];
    await app.unrecorded.record({ reqId: String(reqId), chatId: owner.chatId }, steps);
    if (!loggedElsewhere) log.info({ responseId, status }, 'background answer logged');
  } catch (err) {
    log.error({ err }, 'could not log the answer of a background response');
  }
}
