/**
 * GET /v1/sessions/{id}/tail?from=N: a live tail of a chat's log as server-sent events, for the log
 * viewer (and `curl -N`). Each batch of events appended from `from` on (default: the end of the
 * log when the tail starts; a `Last-Event-ID` header resumes after a reconnect) comes as one
 * `events` event `{"events": [...], "next": <offset to read from next>}` whose SSE id is that next
 * offset. The log is polled, so appends made by other replicas on a shared store show up too. A
 * comment line every 15 s keeps proxies from closing an idle tail; the tail ends when the client
 * leaves, the gateway shuts down or the chat is gone (`end` with reason `gone`).
 */
import { Router, type Request, type Response } from 'express';
import { parseReadBound } from '../../chat-log/read-range.ts';
import { OdaError, isOdaError } from '../../lib/errors.ts';
import type { AppContext } from '../app-context.ts';
import { visibleChat } from '../visible-chat.ts';

const POLL_MS = 400;
const KEEP_ALIVE_MS = 15_000;
const BATCH_MAX = 1000;

/** Where the tail starts: `from`, else the offset after `Last-Event-ID`, else the end of the log. */
function startOffset(req: Request): number | undefined {
  const q = req.query as Record<string, unknown>;
  let from: number | undefined;
  try {
    from = parseReadBound(q.from, 'offset');
  } catch {
    throw new OdaError(
      'ODA_ERR_INVALID_REQUEST',
      400,
      `from must be a non-negative integer (a log offset), got ${JSON.stringify(String(q.from)).slice(0, 60)}`,
      { param: 'from' },
    );
  }
  if (from !== undefined) return from;
  const last = req.headers['last-event-id'];
  return typeof last === 'string' && /^[0-9]{1,15}$/.test(last) ? Number(last) : undefined;
}

/** False once the server that accepted the connection stopped listening (a shutdown began). */
function serverListening(req: Request): boolean {
  const server = (req.socket as unknown as { server?: { listening?: unknown } }).server;
  return server?.listening !== false;
}

/**
 * Writes `text`, then waits for the client to take it. Resolves at once when the client is gone:
 * a closed response never drains, and its 'close' has already fired.
 */
export function write(res: Response, text: string): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  if (res.write(text) || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export function sessionTailRoutes(app: AppContext): Router {
  const r = Router();

  r.get('/v1/sessions/:id/tail', async (req, res) => {
    const { id } = await visibleChat(app, req, res);
    let next = startOffset(req) ?? (await app.chatLog.open(id))?.count ?? 0;

    res.status(200);
    res.setHeader('content-type', 'text/event-stream; charset=utf-8');
    res.setHeader('cache-control', 'no-cache, no-transform');
    res.setHeader('x-accel-buffering', 'no');
    res.flushHeaders();

    // A client that left while the chat was being opened is gone already: no 'close' is coming.
    let open = !res.destroyed;
    let wake: (() => void) | undefined;
    res.on('close', () => {
      open = false;
      wake?.();
    });
    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });

    await write(res, `retry: 2000\nevent: ready\ndata: ${JSON.stringify({ next })}\n\n`);
    let quietSince = app.clock.now();
    while (open) {
      if (!serverListening(req)) {
        await write(res, 'event: end\ndata: {"reason":"shutdown"}\n\n');
        break;
      }
      let events;
      try {
        events = await app.chatLog.read(id, next, BATCH_MAX);
      } catch (err) {
        // The chat is gone (its file removed, its keys lost): nothing more will come.
        if (isOdaError(err) && err.code === 'ODA_ERR_NOT_FOUND') {
          await write(res, 'event: end\ndata: {"reason":"gone"}\n\n');
          break;
        }
        const message = err instanceof Error ? err.message : String(err);
        app.logger.warn({ chat: id, error: message }, 'log tail read failed');
        await write(res, `event: error\ndata: ${JSON.stringify({ message })}\n\n`);
        break;
      }
      if (events.length > 0) {
        next = events[events.length - 1]!.seq + 1;
        await write(res, `id: ${next}\nevent: events\ndata: ${JSON.stringify({ events, next })}\n\n`);
        quietSince = app.clock.now();
        if (events.length === BATCH_MAX) continue;
      } else if (app.clock.now() - quietSince >= KEEP_ALIVE_MS) {
        await write(res, ': keep-alive\n\n');
        quietSince = app.clock.now();
      }
      await pause(POLL_MS);
    }
    res.end();
  });

  return r;
}
