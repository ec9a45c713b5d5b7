/**
 * A Redis server of the test's own (on a free port, in a temp dir), for a test that does to Redis
 * what the shared one must not see (pause it, stop it, start it again). Needs a `redis-server` binary.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from './free-port.ts';
import { tempDir } from './temp-dir.ts';

/** True when a `redis-server` binary can be started. */
export const redisServerInstalled =
  spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;

/**
 * Starts a private Redis; resolves once it accepts connections. Without persistence by default;
 * `persist` keeps every write in an append-only file synced at once, so `restart` (after `stop`,
 * which kills the server like a crash) brings the same data back on the same port.
 */
export async function privateRedis(opts: { persist?: boolean } = {}): Promise<{
  url: string;
  stop: () => Promise<void>;
  restart: () => Promise<void>;
}> {
  const port = await freePort();
  const dir = tempDir('oda-redis-');
  const persistence = opts.persist
    ? ['--appendonly', 'yes', '--appendfsync', 'always']
    : ['--appendonly', 'no'];
  let child: ChildProcess;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const c = connect(port, '127.0.0.1');
        c.on('connect', () => (c.end(), resolve(true)));
        c.on('error', () => resolve(false));
      });
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    await stop();
    throw new Error('private redis-server did not start');
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    stop,
    async restart() {
      await stop();
      await start();
    },
  };
}
