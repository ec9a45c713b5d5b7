/**
 * The gateway's entry point, and the only reader of process.env. Loads and validates the config
 * (a bad one stops start-up with a message naming the key), listens, and shuts down gracefully on
 * SIGTERM/SIGINT: stop accepting, let in-flight requests and streams finish within the grace
 * period (closing each connection after its answer; a second signal ends it at once), let the calls
 * it cut finish writing to the chat log, try once more the answers whose record failed, flush it,
 * exit 0.
 */
import type { Server } from 'node:http';
import { createApp } from './app.ts';
import { ConfigError, loadConfig } from '../config/config.ts';
import { DataDirInUseError } from '../chat-log/data-dir-claim.ts';
import { listenGateway } from './listen.ts';
import { createLogger } from './logger.ts';
import { setHeapGrowth } from './heap-growth.ts';

/**
 * How long, once the connections are closed, the calls still at work get to log their answers
 * (and the answers whose record failed get their last try) before the chat log closes: a cut call
 * logs in milliseconds; this only bounds a store that hangs.
 */
const LOG_CUT_CALLS_MS = 5_000;

function configPathFromArgs(argv: string[]): string | undefined {
  const i = argv.indexOf('--config');
  const path =
    i !== -1 ? argv[i + 1] : argv.find((a) => a.startsWith('--config='))?.slice('--config='.length);
  // `--config` asks for a file: without one, start-up stops rather than run on defaults.
  if ((i !== -1 || path !== undefined) && (path === undefined || path === '' || path.startsWith('--')))
    throw new ConfigError('--config: expected the path of a config file after it');
  return path;
}

async function main(): Promise<void> {
  // The gateway's own process lets V8's old generation grow further between full collections.
  setHeapGrowth(process.execArgv, process.env.NODE_OPTIONS);
  let config;
  try {
    config = loadConfig(process.env, configPathFromArgs(process.argv.slice(2)));
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`oda-gateway: ${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  const logger = createLogger(config.logLevel);
  let gateway;
  try {
    // The file store claims its dataDir here (before the port), and opens nothing else yet.
    gateway = createApp(config, { logger, openStoreAtStart: false });
  } catch (e) {
    if (e instanceof DataDirInUseError) {
      logger.fatal({ dataDir: config.dataDir, holder: e.holder }, e.message);
      process.exit(1);
    }
    throw e;
  }
  const server: Server = listenGateway(gateway, config, logger);
  server.on('listening', () => gateway.openStore());
  server.on('error', (err) => {
    logger.fatal({ err }, 'cannot listen');
    // Releases the dataDir claim; the index was never opened.
    void gateway
      .close()
      .catch(() => undefined)
      .finally(() => process.exit(1));
  });

  let stopping = false;
  let cutNow: ((signal: string) => void) | undefined;
  const stop = (signal: string) => {
    // A second signal (Ctrl-C twice) ends the grace period at once; the chat log is still flushed.
    if (stopping) return cutNow?.(signal);
    stopping = true;
    logger.info({ signal, graceMs: config.server.shutdownGraceMs }, 'shutting down');
    // Answers still to come close their connections, and new requests on open ones are refused,
    // so keep-alive clients reconnect elsewhere instead of starting calls the grace period cuts.
    gateway.context.drain.start();
    server.close();
    server.closeIdleConnections();
    const closeRemaining = () => {
      gateway.context.drain.cut();
      server.closeAllConnections();
    };
    const force = setTimeout(() => {
      logger.warn('grace period over; closing remaining connections');
      closeRemaining();
    }, config.server.shutdownGraceMs);
    force.unref();
    cutNow = (again) => {
      cutNow = undefined;
      clearTimeout(force);
      logger.warn({ signal: again }, 'second signal: closing remaining connections now');
      closeRemaining();
    };
    server.on('close', async () => {
      clearTimeout(force);
      // The server closes once its connections have; calls cut with them still write to the chat
      // log (a cut stream, a call waiting on the provider or in its retry backoff logs its failed
      // answer; a chat being created is written), and it must take those before it closes and the
      // process exits.
      const working = gateway.context.drain.working;
      const waitStarted = Date.now();
      if (!(await gateway.context.drain.settled(LOG_CUT_CALLS_MS)))
        logger.error(
          { calls: gateway.context.drain.working, waitedMs: LOG_CUT_CALLS_MS },
          'calls still writing to the chat log at exit; what they were writing (a failed response, a new chat) may be missing from it',
        );
      else if (working > 0) logger.info({ calls: working }, 'calls cut short have written to the chat log');
      // Answers whose record failed while the store was away get one more try, within the same
      // wait; what the store still does not take is logged as missing when the gateway closes.
      await gateway.context.unrecorded.flush(LOG_CUT_CALLS_MS - (Date.now() - waitStarted));
      await gateway.close().catch((err) => logger.error({ err }, 'error while flushing the chat log'));
      logger.info('stopped');
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

void main();
