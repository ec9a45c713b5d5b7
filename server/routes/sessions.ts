import { Router, type Request } from 'express';
import { z } from 'zod';
import { OdaError } from '../../lib/errors.ts';
import type { AppContext } from '../app-context.ts';
import type { Caller } from '../auth.ts';
import { parseJsonBody } from '../json-body.ts';
import { scopedChatId, visibleTo } from '../team-scope.ts';
import { assertChatId, isChatId } from '../../chat-log/chat-id.ts';

/** The header metadata a client may give when it creates a chat; anything else is refused. */
const createBody = z.strictObject({
  id: z.unknown().optional(),
  createdAt: z.unknown().optional(),
  cwd: z.unknown().optional(),
  parent: z.unknown().optional(),
  origin: z.unknown().optional(),
  depth: z.unknown().optional(),
  preset: z.unknown().optional(),
});

function caller(res: { locals: Record<string, unknown> }): Caller {
  return res.locals.caller as Caller;
}

/** The chat the path names for the caller (team ids are scoped); a malformed id is a 400. */
function chatIdParam(req: Request, who: Caller): string {
  const id = req.params.id;
  assertChatId(id);
  return scopedChatId(id, who);
}

/**
 * The chat routes (SPEC section 2): list, create, header + snapshot, and a range of the log.
 * Another team's chat answers 404, exactly as a chat that does not exist.
 */
export function sessionsRoutes(app: AppContext): Router {
  const r = Router();
  const notFound = (id: string) => new OdaError('ODA_ERR_NOT_FOUND', 404, `no chat with id "${id}"`);

  async function visibleHeader(id: string, who: Caller) {
    const header = await app.chatLog.header(id);
    if (!header || !visibleTo(header.team, who)) throw notFound(id);
    return header;
  }

  r.get('/v1/sessions', async (_req, res) => {
    const who = caller(res);
    const all = await app.chatLog.list();
    const sessions = all
      .filter((s) => visibleTo(s.team, who))
      .map(({ id, createdAt, parent, eventCount, lastActivityAt }) => ({
        id,
        createdAt,
        ...(parent !== undefined ? { parent } : {}),
        eventCount,
        lastActivityAt,
      }));
    res.json({ sessions });
  });

  r.post('/v1/sessions', async (req, res) => {
    const who = caller(res);
    const { body } = parseJsonBody(req.body);
    const parsed = createBody.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.join('.') || 'body';
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, `${where}: ${issue.message}`, { param: where });
    }
    const given = parsed.data.id ?? `chat-${crypto.randomUUID()}`;
    // A team's chat goes into its namespace, where its model calls with the same id will find it.
    const id = typeof given === 'string' && isChatId(given) ? scopedChatId(given, who) : given;
    // Only metadata a client may set; version, seeding and team are the gateway's.
    const { status, header } = await app.chatLog.createChat({
      ...body,
      id,
      ...(who.team ? { team: who.team } : {}),
    });
    if (status === 'exists') {
      if (!visibleTo(header.team, who)) throw notFound(String(id));
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 409, `a chat with id "${String(id)}" already exists`, {
        param: 'id',
      });
    }
    res.status(201).json({ header });
  });

  r.get('/v1/sessions/:id', async (req, res) => {
    const id = chatIdParam(req, caller(res));
    const header = await visibleHeader(id, caller(res));
    const snapshot = await app.chatLog.snapshot(id);
    res.json({ header, snapshot });
  });

  r.get('/v1/sessions/:id/events', async (req, res) => {
    const id = chatIdParam(req, caller(res));
    await visibleHeader(id, caller(res));
    const q = req.query as Record<string, unknown>;
    const events = await app.chatLog.read(id, q.offset, q.length);
    const last = events[events.length - 1];
    const start = typeof q.offset === 'string' && /^\d+$/.test(q.offset) ? Number(q.offset) : 0;
    res.json({ events, next: last ? last.seq + 1 : start });
  });

  return r;
}
