import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

test('waiting for cut calls to log keeps the process alive until they have, or the wait is over', () => {
  // A process whose only pending work is that wait (the server closed, the call waiting on
  // nothing that holds the event loop): it must reach the end of the wait, where the gateway
  // closes its chat log, not exit before.
  const script = `
    import { Drain } from ${JSON.stringify(new URL('./drain.ts', import.meta.url).href)};
    const drain = new Drain();
    drain.hold();
    const settled = await drain.settled(150);
    console.log('settled ' + settled + ', calls ' + drain.working);
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.trim(), 'settled false, calls 1');
});

test('a released call ends the wait at once', async () => {
  const { Drain } = await import('./drain.ts');
  const drain = new Drain();
  const release = drain.hold();
  const waiting = drain.settled(60_000);
  release();
  release(); // a second release counts nothing
  assert.equal(await waiting, true);
  assert.equal(drain.working, 0);
});

test('a held handler counts until it is done, whether it answered or threw', async () => {
  const { Drain, heldAtShutdown } = await import('./drain.ts');
  const drain = new Drain();
  let finish!: () => void;
  const handler = heldAtShutdown(drain, (_req, _res) => new Promise<void>((resolve) => (finish = resolve)));
  const failing = heldAtShutdown(drain, async () => {
    throw new Error('refused');
  });
  // Neither handler looks at the request or the response.
  const [req, res] = [{}, {}] as Parameters<typeof handler>;
  const running = handler(req, res);
  assert.equal(drain.working, 1);
  await assert.rejects(failing(req, res), /refused/);
  assert.equal(drain.working, 1, 'the failed one is no longer counted');
  const waiting = drain.settled(60_000);
  finish();
  await running;
  assert.equal(await waiting, true);
  assert.equal(drain.working, 0);
});
