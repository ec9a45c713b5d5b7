/**
 * The gateway in a process of its own, for the benchmarks: what server/main.ts does (validated
 * config, createApp, listen, no Node request timeout), with the config given as a JSON argument.
 * Its stdout carries the gateway's log lines (the benchmark points it at a file); the port is
 * reported over IPC.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../server/app.ts';
import { parseConfig } from '../config/config.ts';
import { createLogger } from '../server/logger.ts';
import { serveChildProtocol } from './processes.ts';

const { config: raw } = JSON.parse(process.argv[2] ?? '{}') as { config: unknown };
const config = parseConfig(raw);
const gateway = createApp(config, { logger: createLogger(config.logLevel) });
const server: Server = gateway.app.listen(0, config.server.host, () => {
  serveChildProtocol((server.address() as AddressInfo).port, async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await gateway.close();
  });
});
server.requestTimeout = 0;
server.headersTimeout = 60_000;
