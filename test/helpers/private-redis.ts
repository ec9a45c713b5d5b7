/**
 * A Redis server of the test's own (on a free port, in a temp dir), for a test that does to Redis
 * what the shared one must not see (pause it, stop it). Needs a `redis-server` binary.
 */
import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free-port.ts';
import { tempDir } from './temp-dir.ts';

/** True when a `redis-server` binary can be started. */
export const redisServerInstalled =
  spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/** Starts a private Redis, without persistence; resolves once it accepts connections. */
export async function privateRedis(): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      tempDir('oda-redis-'),
    ],
    { stdio: 'ignore' },
  );
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const c = connect(port, '127.0.0.1');
      c.on('connect', () => (c.end(), resolve(true)));
      c.on('error', () => resolve(false));
    });
    if (up) return { url: `redis://127.0.0.1:${port}`, stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error('private redis-server did not start');
}
