/**
 * GET /v1/sessions/{id}/received?offset=&length=: what the model received, for the log viewer.
 * For the message events in the range, the ones the chat's decisions and the image replay clean-up
 * changed come back in the form the chat's latest request carried them, each changed part named
 * with the mechanism (and decision event) that changed it. At most 1,000 events per call.
 */
import { Router } from 'express';
import { parseReadRange } from '../../chat-log/read-range.ts';
import type { AppContext } from '../app-context.ts';
import type { LogPart, PageMessage } from '../log-request-view.ts';
import { receivedView } from '../received-view.ts';
import { visibleChat } from '../visible-chat.ts';

/** Most events one call reads. */
export const RECEIVED_PAGE_MAX = 1000;
/** How far back from the end of the log the chat's wire format is looked for. */
const FORMAT_LOOKBACK = 64;

type LoggedEvent = Awaited<ReturnType<AppContext['chatLog']['read']>>[number];

function requestFormat(events: readonly LoggedEvent[]): string | undefined {
  for (const e of events) if (e.type === 'request') return e.format;
  return undefined;
}

export function sessionReceivedRoutes(app: AppContext): Router {
  const r = Router();

  r.get('/v1/sessions/:id/received', async (req, res) => {
    // Checked: a chat whose log was removed is the 404 of a chat that never was.
    const { id } = await visibleChat(app, req, res, { checked: true });
    const q = req.query as Record<string, unknown>;
    const range = parseReadRange(q.offset, q.length);
    const length = Math.min(range.length ?? RECEIVED_PAGE_MAX, RECEIVED_PAGE_MAX);
    const [events, state] = await Promise.all([
      app.chatLog.read(id, range.offset, length),
      app.chatLog.open(id),
    ]);
    const next = events.length > 0 ? events[events.length - 1]!.seq + 1 : range.offset;

    const page: PageMessage[] = [];
    for (const e of events) {
      if (e.type === 'message')
        page.push({ seq: e.seq, role: e.role, content: e.content as readonly LogPart[] });
    }
    let data: ReturnType<typeof receivedView> = [];
    if (page.length > 0 && state) {
      let format = requestFormat(events);
      if (format === undefined) {
        const count = state.count;
        const tail = await app.chatLog.read(id, Math.max(0, count - FORMAT_LOOKBACK), FORMAT_LOOKBACK);
        format = requestFormat([...tail].reverse()) ?? 'openai';
      }
      const pruning = app.config.pruning;
      data = receivedView({
        page,
        others: state.messages.messages,
        format,
        decisions: state.decisions,
        settings: {
          softTrim: pruning.softTrim,
          hardClear: pruning.hardClear,
          imageReplay: pruning.imageReplay,
        },
      });
    }
    res.json({ object: 'list', data, offset: range.offset, next_offset: next });
  });

  return r;
}
