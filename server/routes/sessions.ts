import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { OdaError } from '../../lib/errors.ts';
import type { AppContext } from '../app-context.ts';
import { heldAtShutdown } from '../drain.ts';
import type { Caller } from '../auth.ts';
import { parseJsonBody } from '../json-body.ts';
import { scopedChatId, teamPrefix, visibleTo } from '../team-scope.ts';
import { sessionTree } from '../session-tree.ts';
import { chatAccounts } from '../usage-accounting.ts';
import { assertChatId, isChatId } from '../../chat-log/chat-id.ts';
import { parseReadBound } from '../../chat-log/read-range.ts';
import {
  decodeCursor,
  encodeCursor,
  readIdFilter,
  readPageLimit,
  readTimeBound,
  type ChatListQuery,
  type ChatSummary,
} from '../../chat-log/chat-page.ts';

/** The most one `GET /v1/sessions/{id}/events` answers (SPEC section 14): events, and bytes of events. */
export const MAX_EVENTS_PER_READ = 1000;
export const MAX_EVENT_BYTES_PER_READ = 8 * 1024 * 1024;

/** Bytes of event lines gathered before they are written to the response. */
const WRITE_CHUNK = 64 * 1024;

const badQuery = (param: string, message: string) =>
  new OdaError('ODA_ERR_INVALID_REQUEST', 400, `${param} ${message}`, { param });

/** A query value given at most once, as text. */
function queryText(q: Record<string, unknown>, param: string): string | undefined {
  const v = q[param];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw badQuery(param, 'must be given once');
  return v;
}

/** A time bound (`from`, `to`), read as `chat-page.ts` reads it. */
function timeParam(q: Record<string, unknown>, param: string): number | undefined {
  return readTimeBound(queryText(q, param), param);
}

/** An id filter (`id_prefix`, `id_contains`), read as `chat-page.ts` reads it. */
function idFilter(q: Record<string, unknown>, param: string): string | undefined {
  return readIdFilter(queryText(q, param), param);
}

/**
 * The page a `GET /v1/sessions` asks for, in the caller's view: a team sees only its own chats (a
 * `team` filter naming another team finds none) and its id prefix is read inside its namespace.
 */
function listQuery(q: Record<string, unknown>, who: Caller): ChatListQuery | undefined {
  const limit = readPageLimit(queryText(q, 'limit'), 'limit');
  const cursor = queryText(q, 'cursor');
  const query: ChatListQuery = { limit };
  if (cursor !== undefined) query.after = decodeCursor(cursor);
  const team = queryText(q, 'team');
  const ownTeam = who.admin ? undefined : who.team;
  if (ownTeam !== undefined && team !== undefined && team !== ownTeam) return undefined;
  if (ownTeam !== undefined || team !== undefined) query.team = ownTeam ?? team;
  let prefix = idFilter(q, 'id_prefix');
  if (prefix !== undefined && ownTeam !== undefined && !prefix.startsWith(teamPrefix(ownTeam))) {
    prefix = teamPrefix(ownTeam) + prefix;
  }
  if (prefix !== undefined) query.idPrefix = prefix;
  const contains = idFilter(q, 'id_contains');
  if (contains !== undefined) query.idContains = contains;
  const from = timeParam(q, 'from');
  const to = timeParam(q, 'to');
  if (from !== undefined) query.activeFrom = from;
  if (to !== undefined) query.activeTo = to;
  return query;
}

/** One chat as `GET /v1/sessions` shows it. */
function listed({ id, createdAt, parent, team, cwd, eventCount, lastActivityAt }: ChatSummary) {
  return {
    id,
    createdAt,
    ...(parent !== undefined ? { parent } : {}),
    ...(team !== undefined ? { team } : {}),
    ...(cwd !== undefined ? { cwd } : {}),
    eventCount,
    lastActivityAt,
  };
}

/** Writes `chunk`, waiting while the client's socket is full; false when the client has gone. */
function write(res: Response, chunk: string): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (res.write(chunk)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    res.on('drain', onDrain);
    res.on('close', onClose);
  });
}

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

  /** The chat's header if `who` may see it, else a 404; `checked`: found still stored (one stat). */
  async function visibleHeader(id: string, who: Caller, checked = false) {
    const header = await (checked ? app.chatLog.checkedHeader(id) : app.chatLog.header(id));
    if (!header || !visibleTo(header.team, who)) throw notFound(id);
    return header;
  }

  // A page of the caller's chats, newest activity first, from the store's lasting index. `sessions`
  // repeats `data` for clients written before paging.
  r.get('/v1/sessions', async (req, res) => {
    const who = caller(res);
    const query = listQuery(req.query as Record<string, unknown>, who);
    const page = query ? await app.chatLog.listPage(query) : { chats: [] };
    const data = page.chats.filter((s) => visibleTo(s.team, who)).map(listed);
    res.json({
      object: 'list',
      data,
      has_more: page.next !== undefined,
      next_cursor: page.next ? encodeCursor(page.next) : null,
      ...(page.indexing ? { indexing: true } : {}),
      sessions: data,
    });
  });

  // Writes to the chat log: at shutdown the log closes after it, like after a model call.
  r.post(
    '/v1/sessions',
    heldAtShutdown(app.drain, async (req, res) => {
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
    }),
  );

  r.get('/v1/sessions/:id', async (req, res) => {
    const id = chatIdParam(req, caller(res));
    // Checked: the header and read models are held in memory and would otherwise still be served
    // for a chat whose file was removed behind the gateway; found gone, it is a 404 and unlisted.
    const header = await visibleHeader(id, caller(res), true);
    const snapshot = await app.chatLog.snapshot(id);
    const conversations = await sessionTree(app.chatLog, header, caller(res));
    res.json({ header, snapshot, conversations, ...(await chatAccounts(app, id)) });
  });

  // At most MAX_EVENTS_PER_READ events or MAX_EVENT_BYTES_PER_READ bytes of them per call, streamed
  // as they are read (the log is never held whole); `next_offset` says where to go on, null at the end.
  r.get('/v1/sessions/:id/events', async (req, res) => {
    const id = chatIdParam(req, caller(res));
    await visibleHeader(id, caller(res));
    const q = req.query as Record<string, unknown>;
    const read = await app.chatLog.readLines(
      id,
      q.offset,
      q.length,
      MAX_EVENTS_PER_READ,
      MAX_EVENT_BYTES_PER_READ,
    );
    const offset = parseReadBound(q.offset, 'offset') ?? 0;
    const lines = read.lines[Symbol.asyncIterator]();
    // The first line is read before the status goes out, so a damaged log is still a plain 500.
    let item = await lines.next();
    res.status(200).setHeader('content-type', 'application/json; charset=utf-8');
    let n = 0;
    let buffered = '{"events":[';
    try {
      for (; !item.done; item = await lines.next()) {
        buffered += (n++ === 0 ? '' : ',') + item.value;
        if (buffered.length >= WRITE_CHUNK) {
          const open = await write(res, buffered);
          buffered = '';
          if (!open) return void (await lines.return(undefined));
        }
      }
    } catch (err) {
      // Status and part of the body are out: cut the response short so the client sees it broken.
      app.logger.error({ err, chat: id, reqId: res.locals.requestId }, 'chat log read failed mid-stream');
      res.destroy();
      return;
    }
    const next = offset + n;
    const nextOffset = next < read.count ? next : null;
    await write(res, `${buffered}],"next":${n > 0 ? next : offset},"next_offset":${nextOffset}}`);
    res.end();
  });

  return r;
}
