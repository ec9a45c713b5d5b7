import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../lib/clock.ts';
import { Captured } from '../test/helpers/captured-log.ts';
import { LimitedLog, type LimitedLine } from './limited-log.ts';
import { createLogger } from './logger.ts';

/** A limited log writing to a captured logger, on a clock the test moves. */
function rig(opts: { intervalMs?: number; maxSources?: number } = {}) {
  const out = new Captured();
  const clock = new ManualClock();
  const log = new LimitedLog(createLogger('info', out), clock, opts);
  const lines = () =>
    out.text
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const { level, msg, reqId, address, team, sources, suppressed, summary, code } = JSON.parse(
          l,
        ) as Record<string, unknown>;
        // Only the fields the limiter decides on (pino adds time, pid...).
        return Object.fromEntries(
          Object.entries({ level, msg, reqId, address, team, sources, suppressed, summary, code }).filter(
            ([, v]) => v !== undefined,
          ),
        );
      });
  return { log, clock, lines };
}

const unauthorized = (address: string, reqId: string): LimitedLine => ({
  level: 'info',
  kind: 'ODA_ERR_UNAUTHORIZED 401',
  source: { address },
  reqId,
  fields: { code: 'ODA_ERR_UNAUTHORIZED' },
  msg: 'invalid team key',
});

describe('LimitedLog: lines a caller can cause at will, limited per kind and source', () => {
  test('the first line goes out at once, then one per interval carrying how many were left out', () => {
    const { log, clock, lines } = rig({ intervalMs: 10_000 });
    for (let i = 1; i <= 5; i++) log.write(unauthorized('203.0.113.7', `r${i}`));
    assert.deepEqual(lines(), [
      {
        level: 30,
        msg: 'invalid team key',
        reqId: 'r1',
        address: '203.0.113.7',
        code: 'ODA_ERR_UNAUTHORIZED',
      },
    ]);
    clock.advance(9_999);
    log.write(unauthorized('203.0.113.7', 'r6'));
    assert.equal(lines().length, 1, 'still within the interval');
    clock.advance(1);
    log.write(unauthorized('203.0.113.7', 'r7'));
    log.write(unauthorized('203.0.113.7', 'r8'));
    assert.deepEqual(lines().slice(1), [
      {
        level: 30,
        msg: 'invalid team key',
        reqId: 'r7',
        address: '203.0.113.7',
        code: 'ODA_ERR_UNAUTHORIZED',
        suppressed: 5,
      },
    ]);
  });

  test('another source, or another kind from the same source, has lines of its own', () => {
    const { log, lines } = rig();
    log.write(unauthorized('203.0.113.7', 'r1'));
    log.write(unauthorized('203.0.113.7', 'r2'));
    log.write(unauthorized('198.51.100.1', 'r3'));
    log.write({ ...unauthorized('203.0.113.7', 'r4'), kind: 'ODA_ERR_NOT_FOUND 404', msg: 'not served' });
    log.write({ level: 'info', kind: 'ODA_ERR_RATE_LIMITED 429', source: { team: 'a' }, msg: 'over' });
    log.write({ level: 'info', kind: 'ODA_ERR_RATE_LIMITED 429', source: { team: 'b' }, msg: 'over' });
    log.write({ level: 'info', kind: 'ODA_ERR_RATE_LIMITED 429', source: { team: 'a' }, msg: 'over' });
    assert.deepEqual(
      lines().map((l) => [l.reqId, l.address ?? l.team, l.msg]),
      [
        ['r1', '203.0.113.7', 'invalid team key'],
        ['r3', '198.51.100.1', 'invalid team key'],
        ['r4', '203.0.113.7', 'not served'],
        [undefined, 'a', 'over'],
        [undefined, 'b', 'over'],
      ],
    );
  });

  test('a source that falls quiet gets a summary of what was left out: on the next line after its interval, or at close', () => {
    const { log, clock, lines } = rig({ intervalMs: 10_000 });
    for (let i = 1; i <= 4; i++) log.write(unauthorized('203.0.113.7', `r${i}`));
    log.write(unauthorized('198.51.100.1', 'q1'));
    log.write(unauthorized('198.51.100.1', 'q2'));
    clock.advance(10_000);
    // Another kind and source: the quiet sources' intervals are over, so their counts go out first.
    log.write({ level: 'warn', kind: 'refused-address', source: { address: '192.0.2.9' }, msg: 'refused' });
    assert.deepEqual(lines().slice(2), [
      {
        level: 30,
        msg: 'invalid team key',
        address: '203.0.113.7',
        code: 'ODA_ERR_UNAUTHORIZED',
        suppressed: 3,
        summary: true,
      },
      {
        level: 30,
        msg: 'invalid team key',
        address: '198.51.100.1',
        code: 'ODA_ERR_UNAUTHORIZED',
        suppressed: 1,
        summary: true,
      },
      { level: 40, msg: 'refused', address: '192.0.2.9' },
    ]);
    log.write({ level: 'warn', kind: 'refused-address', source: { address: '192.0.2.9' }, msg: 'refused' });
    log.flush();
    assert.deepEqual(lines().slice(5), [
      { level: 40, msg: 'refused', address: '192.0.2.9', suppressed: 1, summary: true },
    ]);
    log.flush();
    assert.equal(lines().length, 6, 'a count is written once');
  });

  test('memory is bounded: sources are forgotten after their interval, and past maxSources new ones share one entry', () => {
    const { log, clock, lines } = rig({ intervalMs: 10_000, maxSources: 3 });
    // An attacker rotating addresses: 100 of them, 5 lines each, within one interval.
    for (let round = 0; round < 5; round++)
      for (let a = 0; a < 100; a++) log.write(unauthorized(`10.0.0.${a}`, `r${round}.${a}`));
    assert.equal(log.size, 4, 'three sources and the shared entry of the others');
    // Three sources' first lines and the first line of the others; every other line is counted.
    assert.deepEqual(
      lines().map((l) => [l.address, l.sources]),
      [
        ['10.0.0.0', undefined],
        ['10.0.0.1', undefined],
        ['10.0.0.2', undefined],
        ['10.0.0.3', 'others'],
      ],
    );
    clock.advance(10_000);
    log.write(unauthorized('10.0.0.200', 'late'));
    assert.deepEqual(
      lines()
        .slice(4)
        .map((l) => [l.address ?? l.sources, l.suppressed, l.summary]),
      [
        ['10.0.0.0', 4, true],
        ['10.0.0.1', 4, true],
        ['10.0.0.2', 4, true],
        ['others', 5 * 97 - 1, true],
        ['10.0.0.200', undefined, undefined],
      ],
    );
    assert.equal(log.size, 1, 'the quiet sources were forgotten');
  });
});
