/**
 * GET /v1/usage?team=&from=&to= (SPEC section 11): billed tokens by kind and what the mechanisms
 * removed, per team and UTC day, from the usage ledger (no chat is opened). A team key sees its own
 * team; an admin key every team, or the one `team` names; on an open gateway everyone sees all.
 */
import { Router } from 'express';
import { z } from 'zod';
import { OdaError } from '../../lib/errors.ts';
import { COUNTERS, noCounts, utcDay, type Counts, type UsageRow } from '../../chat-log/usage-ledger.ts';
import { removalsView, tokensView } from '../../chat-log/read-models/savings.ts';
import type { AppContext } from '../app-context.ts';
import { callerOf } from '../visible-chat.ts';

const DAY_MS = 86_400_000;
/** The widest range one call may ask for, in days. */
export const MAX_USAGE_DAYS = 366;
/** Days shown when `from` is not given: the last 30, `to` included. */
const DEFAULT_DAYS = 30;

const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD (UTC)')
  .refine((d) => utcDay(Date.parse(`${d}T00:00:00Z`) || 0) === d, 'expected a real calendar date YYYY-MM-DD');

const query = z.strictObject(
  {
    team: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected a team name (1-64 of A-Za-z0-9._-)')
      .optional(),
    from: date.optional(),
    to: date.optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? `unknown query parameter(s): ${issue.keys.join(', ')}` : undefined,
  },
);

/** One row of the answer: counts as the API shows them. */
function shown(counts: Counts) {
  return {
    answered: counts.answers,
    usage: tokensView(counts),
    removed: removalsView(counts),
  };
}

export function usageRoutes(app: AppContext): Router {
  const r = Router();

  r.get('/v1/usage', async (req, res) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const param = issue.path.length > 0 ? issue.path.join('.') : 'query';
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, `${param}: ${issue.message}`, { param });
    }
    const q = parsed.data;
    const to = q.to ?? utcDay(app.clock.now());
    const from = q.from ?? utcDay(Date.parse(`${to}T00:00:00Z`) - (DEFAULT_DAYS - 1) * DAY_MS);
    if (from > to) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, `from: ${from} is after to (${to})`, {
        param: 'from',
      });
    }
    const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;
    if (days > MAX_USAGE_DAYS) {
      throw new OdaError(
        'ODA_ERR_INVALID_REQUEST',
        400,
        `from: the range ${from}..${to} is ${days} days; at most ${MAX_USAGE_DAYS} per call`,
        { param: 'from' },
      );
    }

    const who = callerOf(res);
    let teams: ReadonlySet<string | null> | undefined;
    if (who.team !== undefined && !who.admin) {
      if (q.team !== undefined && q.team !== who.team) {
        throw new OdaError(
          'ODA_ERR_FORBIDDEN',
          403,
          `a team key sees only its own team's usage ("${who.team}")`,
          {
            param: 'team',
          },
        );
      }
      teams = new Set([who.team]);
    } else if (q.team !== undefined) {
      teams = new Set([q.team]);
    }

    const rows: UsageRow[] = await app.usage.rows(from, to, teams);
    rows.sort((a, b) =>
      a.day === b.day ? (a.team ?? '').localeCompare(b.team ?? '') : a.day < b.day ? -1 : 1,
    );
    const total = noCounts();
    for (const row of rows) for (const c of COUNTERS) total[c] += row.counts[c];
    res.json({
      from,
      to,
      days: rows.map((row) => ({ day: row.day, team: row.team, ...shown(row.counts) })),
      total: shown(total),
    });
  });

  return r;
}
