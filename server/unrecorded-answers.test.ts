import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OdaError } from '../lib/errors.ts';
import { Captured } from '../test/helpers/captured-log.ts';
import { createLogger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { UnrecordedAnswers, type UnrecordedAnswersOptions } from './unrecorded-answers.ts';

const down = () => new OdaError('ODA_ERR_STORE_UNAVAILABLE', 503, 'the chat store (Redis) is unavailable');

function setup(opts: Partial<UnrecordedAnswersOptions> = {}) {
  const out = new Captured();
  const metrics = new Metrics();
  const answers = new UnrecordedAnswers({
    logger: createLogger('info', out),
    metrics,
    random: () => 0,
    firstDelayMs: 10,
    maxDelayMs: 20,
    ...opts,
  });
  const lines = () =>
    out.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const value = async (name: string, reason?: string) => {
    const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
    return m?.values.find((v) => reason === undefined || v.labels.reason === reason)?.value ?? 0;
  };
  return { answers, lines, value, metrics };
}

/** A store that fails until `up` is set; records what it took and with which `again`. */
function store() {
  const s = {
    up: false,
    took: [] as Array<{ what: string; again: boolean }>,
    step(what: string) {
      return {
        what,
        run: async (again: boolean) => {
          if (!s.up) throw down();
          s.took.push({ what, again });
        },
      };
    },
  };
  return s;
}

const until = async (ok: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 500 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(await ok());
};

describe('UnrecordedAnswers', () => {
  test('a record that succeeds at once leaves nothing waiting', async () => {
    const { answers, value } = setup();
    const s = store();
    s.up = true;
    await answers.record({ reqId: 'r', chatId: 'c' }, [s.step('response'), s.step('usage')]);
    assert.equal(answers.size, 0);
    assert.deepEqual(s.took, [
      { what: 'response', again: false },
      { what: 'usage', again: false },
    ]);
    assert.equal(await value('oda_answers_waiting_to_be_recorded'), 0);
  });

  test('what failed is tried again in order until the store answers, told it is a try again', async () => {
    const { answers, lines, value } = setup();
    const s = store();
    let usageRuns = 0;
    await answers.record({ reqId: 'r1', chatId: 'c1' }, [
      {
        what: 'usage',
        run: async () => {
          usageRuns++;
        },
      },
      s.step('response'),
      s.step('owners'),
    ]);
    assert.equal(answers.size, 1);
    assert.equal(await value('oda_answers_waiting_to_be_recorded'), 1);
    const warned = lines().find((l) => l.level === 40)!;
    assert.deepEqual([warned.reqId, warned.chatId, warned.missing], ['r1', 'c1', ['response', 'owners']]);
    await new Promise((r) => setTimeout(r, 50));
    s.up = true;
    await until(() => answers.size === 0);
    assert.equal(usageRuns, 1, 'a step done is not run again');
    assert.deepEqual(s.took, [
      { what: 'response', again: true },
      { what: 'owners', again: false },
    ]);
    assert.equal(await value('oda_answers_waiting_to_be_recorded'), 0);
    assert.equal(await value('oda_answers_unrecorded_total'), 0);
    assert.ok(
      lines().some((l) => l.msg === 'recorded the response in the chat log after the store answered again'),
    );
  });

  test('given up, logged at error and counted: past its age, past the cap, refused, or at close', async () => {
    let now = 0;
    const { answers, lines, value } = setup({ maxWaiting: 2, maxAgeMs: 1000, now: () => now });
    const s = store();
    await answers.record({ reqId: 'old', chatId: 'c' }, [s.step('response')]);
    await answers.record({ reqId: 'kept', chatId: 'c' }, [s.step('response')]);
    await answers.record({ reqId: 'one-too-many', chatId: 'c' }, [s.step('response')]);
    assert.equal(answers.size, 2);
    assert.equal(await value('oda_answers_unrecorded_total', 'full'), 1);
    await answers.record({ reqId: 'removed', chatId: 'gone' }, [
      {
        what: 'response',
        run: async () => {
          throw new OdaError('ODA_ERR_NOT_FOUND', 404, 'no chat gone');
        },
      },
    ]);
    assert.equal(await value('oda_answers_unrecorded_total', 'refused'), 1);
    now = 1000;
    await until(() => answers.size === 0);
    assert.equal(await value('oda_answers_unrecorded_total', 'expired'), 2);
    const errors = lines().filter((l) => l.level === 50);
    assert.deepEqual(errors.map((l) => [l.reqId, l.reason]).sort(), [
      ['kept', 'expired'],
      ['old', 'expired'],
      ['one-too-many', 'full'],
      ['removed', 'refused'],
    ]);
    assert.ok(
      errors.every(
        (l) => l.msg === 'an answer the client got could not be recorded: it is missing from the chat log',
      ),
    );

    now = 0;
    await answers.record({ reqId: 'at-exit', chatId: 'c' }, [s.step('response')]);
    answers.close();
    assert.equal(answers.size, 0);
    assert.equal(await value('oda_answers_unrecorded_total', 'shutdown'), 1);
    assert.equal(await value('oda_answers_waiting_to_be_recorded'), 0);
  });

  test('flush tries what waits once more at once, within its time', async () => {
    const { answers, value } = setup({ firstDelayMs: 60_000, maxDelayMs: 60_000 });
    const s = store();
    await answers.record({ reqId: 'r', chatId: 'c' }, [s.step('response')]);
    await answers.record({ reqId: 'slow', chatId: 'c' }, [
      { what: 'response', run: () => (s.up ? new Promise<void>(() => undefined) : Promise.reject(down())) },
    ]);
    s.up = true;
    const started = Date.now();
    await answers.flush(300);
    assert.ok(Date.now() - started < 2000, 'bounded by its time');
    assert.deepEqual(s.took, [{ what: 'response', again: true }]);
    assert.equal(answers.size, 1, 'the one that hangs still waits');
    answers.close();
    assert.equal(await value('oda_answers_unrecorded_total', 'shutdown'), 1);
  });
});
