import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { RedisLogBackend } from './store-redis.ts';
import {
  FileUsageLedger,
  RedisUsageLedger,
  countsOf,
  daysBetween,
  noCounts,
  usageLedgerFor,
  utcDay,
  UtcDays,
  type UsageLedger,
} from './usage-ledger.ts';
import { dropPrefix, redisSkip, redisUrl, uniquePrefix } from '../test/helpers/redis-test.ts';

const DAY = 86_400_000;
const t0 = Date.UTC(2026, 2, 1, 23, 59, 0);
const answer = (input: number, imageReplay = 0) =>
  countsOf(
    { input, cacheWrite: 6, cacheWrite1h: 4, cacheRead: 2, output: 3 },
    {
      trimming: 0,
      pruning: 0,
      imageSetAside: 0,
      imageReplay,
    },
  );

/** The same checks on any ledger. */
async function exercise(ledger: UsageLedger): Promise<void> {
  await ledger.add('research', t0, answer(10, 8000));
  await ledger.add('research', t0 + 90_000, answer(5));
  await ledger.add('design', t0, answer(7));
  await ledger.add(undefined, t0 + 2 * DAY, answer(1));
  const rows = await ledger.rows('2026-03-01', '2026-03-03');
  const find = (day: string, team: string | null) =>
    rows.find((r) => r.day === day && r.team === team)?.counts;
  // 23:59:00 on March 1st and 00:00:30 a minute and a half later are two days (UTC).
  assert.deepEqual(find('2026-03-01', 'research'), { ...answer(10, 8000) });
  assert.deepEqual(find('2026-03-02', 'research'), { ...answer(5) });
  assert.deepEqual(find('2026-03-01', 'design'), answer(7));
  assert.deepEqual(find('2026-03-03', null), answer(1));
  assert.equal(rows.length, 4);
  const research = await ledger.rows('2026-03-01', '2026-03-31', new Set(['research']));
  assert.deepEqual(
    research.map((r) => [r.day, r.team, r.counts.input]),
    [
      ['2026-03-01', 'research', 10],
      ['2026-03-02', 'research', 5],
    ],
  );
  await ledger.add('research', t0, answer(1));
  assert.equal((await ledger.rows('2026-03-01', '2026-03-01', new Set(['research'])))[0]!.counts.answers, 2);
  assert.deepEqual(await ledger.rows('2026-04-01', '2026-04-02'), []);
}

describe('days', () => {
  test('UTC days and ranges', () => {
    assert.equal(utcDay(t0), '2026-03-01');
    assert.equal(utcDay(t0 + 60_000), '2026-03-02');
    assert.deepEqual(daysBetween('2026-02-27', '2026-03-02'), [
      '2026-02-27',
      '2026-02-28',
      '2026-03-01',
      '2026-03-02',
    ]);
    assert.deepEqual(daysBetween('2026-03-02', '2026-03-01'), []);
    assert.deepEqual(daysBetween('2026-03-02', 'not a day'), []);
    assert.equal(
      Object.values(noCounts()).every((n) => n === 0),
      true,
    );
  });
});

describe('UtcDays', () => {
  test('names the same day as utcDay for any times in any order (day edges, before 1970)', () => {
    // Times around a few neighbouring midnights (on them, a ms either side, anywhere between),
    // taken in any order, so consecutive calls cross day edges both ways.
    const midnight = fc.integer({ min: -100_000, max: 100_000 }).map((d) => d * DAY);
    const near = fc.oneof(
      fc.integer({ min: -2, max: 2 }).map((k) => k * DAY),
      fc.integer({ min: -2, max: 2 }).map((k) => k * DAY - 1),
      fc.integer({ min: -2, max: 2 }).map((k) => k * DAY + 1),
      fc.integer({ min: -2 * DAY, max: 2 * DAY }),
    );
    fc.assert(
      fc.property(midnight, fc.array(near, { minLength: 1, maxLength: 40 }), (base, offsets) => {
        const days = new UtcDays();
        for (const offset of offsets) assert.equal(days.of(base + offset), utcDay(base + offset));
      }),
    );
  });
});

describe('days at the end of the calendar', () => {
  test('a range ending on 9999-12-31 ends (the day after prints as +010000-01-01)', () => {
    // In a child process with a deadline, so a loop that never ends fails this test instead of
    // hanging the run.
    const url = JSON.stringify(new URL('./usage-ledger.ts', import.meta.url).href);
    const code = `const m = await import(${url}); console.log(JSON.stringify(m.daysBetween('9999-12-29', '9999-12-31')));`;
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--max-old-space-size=256', '--input-type=module', '-e', code],
      { encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' },
    );
    assert.equal(run.error, undefined, 'daysBetween ended within 20 s');
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), ['9999-12-29', '9999-12-30', '9999-12-31']);
  });
});

describe('FileUsageLedger', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oda-usage-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('sums per team and UTC day, and keeps the sums across a restart', async () => {
    const ledger = new FileUsageLedger(join(dir, 'a'));
    await exercise(ledger);
    await ledger.close();
    const file = JSON.parse(readFileSync(join(dir, 'a', '2026-03-01.json'), 'utf8')) as {
      teams: Record<string, { input: number }>;
    };
    assert.equal(file.teams.research!.input, 11);
    const again = new FileUsageLedger(join(dir, 'a'));
    const rows = await again.rows('2026-03-01', '2026-03-03');
    assert.equal(rows.find((r) => r.team === 'research' && r.day === '2026-03-01')!.counts.input, 11);
    await again.add('research', t0, answer(4));
    await again.close();
    const third = new FileUsageLedger(join(dir, 'a'));
    assert.equal((await third.rows('2026-03-01', '2026-03-01', new Set(['research'])))[0]!.counts.input, 15);
    await third.close();
  });

  test('a damaged day file is an error, not a silent zero', async () => {
    const ledger = new FileUsageLedger(join(dir, 'b'));
    await ledger.add('x', t0, answer(1));
    await ledger.close();
    const { writeFileSync } = await import('node:fs');
    writeFileSync(
      join(dir, 'b', '2026-03-01.json'),
      '{"version":1,"day":"2026-03-01","teams":{"x":{"input":-1}}}',
    );
    await assert.rejects(new FileUsageLedger(join(dir, 'b')).rows('2026-03-01', '2026-03-01'), /not valid/);
  });

  test('a day file written before the one-hour cache writes were counted reads them as 0', async () => {
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(join(dir, 'c'));
    const before = { answers: 2, input: 10, cacheWrite: 6, cacheRead: 2, output: 3 };
    const removed = { trimming: 0, pruning: 0, imageSetAside: 0, imageReplay: 0 };
    writeFileSync(
      join(dir, 'c', '2026-03-01.json'),
      JSON.stringify({ version: 1, day: '2026-03-01', teams: { x: { ...before, ...removed } } }),
    );
    const ledger = new FileUsageLedger(join(dir, 'c'));
    const [row] = await ledger.rows('2026-03-01', '2026-03-01');
    assert.deepEqual(row!.counts, { ...before, cacheWrite1h: 0, ...removed });
    await ledger.add('x', t0, answer(1));
    await ledger.close();
    const again = await new FileUsageLedger(join(dir, 'c')).rows('2026-03-01', '2026-03-01');
    assert.equal(again[0]!.counts.cacheWrite1h, 4);
    assert.equal(again[0]!.counts.cacheWrite, 12);
  });

  test('the file store gets a file ledger under dataDir/usage', () => {
    assert.ok(usageLedgerFor({}, dir) instanceof FileUsageLedger);
  });
});

describe('RedisUsageLedger', { skip: redisSkip }, () => {
  const prefix = uniquePrefix('usage');
  const backend = redisUrl ? new RedisLogBackend({ url: redisUrl, prefix }) : undefined;
  after(async () => {
    await backend?.close();
    await dropPrefix(prefix);
  });

  test('sums per team and UTC day in hashes every replica shares', async () => {
    const ledger = usageLedgerFor(backend, '/nonexistent');
    assert.ok(ledger instanceof RedisUsageLedger);
    await exercise(ledger);
    // A second replica's ledger sees the same sums.
    const other = new RedisUsageLedger((op) => backend!.run(op), prefix);
    const rows = await other.rows('2026-03-01', '2026-03-01', new Set(['research']));
    assert.equal(rows[0]!.counts.input, 11);
  });
});
