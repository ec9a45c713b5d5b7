/**
 * Puts a gateway on the network: the Node HTTP server with the connection bounds of SPEC section 14
 * (`server.maxConnections` and `server.maxConnectionsPerAddress`, idle connections closed first to
 * make room; a header deadline; the body deadline is `timeouts.bodyMs`, in the app),
 * JSON answers to requests Node's parser refuses, and the start-up log line, which shows each
 * provider's base URL as origin and path only and warns when an open gateway is not on loopback.
 */
import { createServer, type Server } from 'node:http';
import type { Gateway } from './app.ts';
import { answerClientErrors } from './client-error.ts';
import { boundConnections } from './connection-bounds.ts';
import type { Config } from '../config/config.ts';
import type { Logger } from './logger.ts';
import { isLoopbackHost } from './origin-guard.ts';

/** Time for a client to send its request headers. */
export const HEADERS_TIMEOUT_MS = 60_000;

/** A provider's base URL as the logs show it: origin and path, never user info or query. */
export function shownBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname === '/' ? '' : url.pathname}`;
}

/** True when anyone who reaches the gateway can use it (no teams) and it listens beyond loopback. */
export function openBeyondLoopback(config: Pick<Config, 'teams' | 'server'>): boolean {
  return (config.teams ?? []).length === 0 && !isLoopbackHost(config.server.host);
}

/** A Node HTTP server for `gateway`, bounded per `config.server`; not listening yet. */
export function createGatewayServer(gateway: Gateway, config: Readonly<Config>): Server {
  const server = createServer(gateway.app);
  answerClientErrors(server);
  const { logger, limitedLog, metrics } = gateway.context;
  boundConnections(server, config.server, (why, address) => {
    // Counted each; logged limited, since anyone who can reach the port can be refused at will.
    metrics.connectionsClosed.inc({ reason: why });
    if (why === 'idle') logger.debug({ address }, 'idle connection closed to make room');
    else if (why === 'refused-address')
      limitedLog.write({
        level: 'warn',
        kind: why,
        source: { address },
        fields: { max: config.server.maxConnectionsPerAddress },
        msg: 'connection refused: server.maxConnectionsPerAddress reached for this address',
      });
    else
      // The whole gateway is full: one line per interval, whichever addresses are refused.
      limitedLog.write({
        level: 'warn',
        kind: why,
        source: {},
        fields: { max: config.server.maxConnections, address },
        msg: 'connection refused: server.maxConnections reached',
      });
  });
  // Long generations: no Node-level deadline on the whole exchange; upstream timeouts govern the
  // answer and timeouts.bodyMs the request body.
  server.requestTimeout = 0;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  return server;
}

/** Listens on `server.host`/`server.port` and logs where, with the warnings an operator needs. */
export function listenGateway(gateway: Gateway, config: Readonly<Config>, logger: Logger): Server {
  const server = createGatewayServer(gateway, config);
  server.listen(config.server.port, config.server.host);
  server.on('listening', () => {
    const addr = server.address();
    // An IPv6 address goes in brackets, so the line's URL works as it stands.
    const where =
      typeof addr === 'object' && addr
        ? `${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
        : String(addr);
    logger.info(
      {
        address: where,
        providers: config.providers.map((p) => ({
          name: p.name,
          format: p.format,
          baseUrl: shownBaseUrl(p.baseUrl),
        })),
      },
      `oda-gateway listening on http://${where}`,
    );
    if (config.providers.length === 0) {
      logger.warn(
        'no providers configured (providers: []): every model call will be refused; list providers in the ' +
          'config file, or leave providers out to take them from the environment',
      );
    }
    if (openBeyondLoopback(config)) {
      logger.warn(
        { host: config.server.host },
        `open gateway (no teams) listening on ${config.server.host}, beyond loopback: anyone who can reach ` +
          'this address can use it and the provider keys it holds; configure teams, or listen on 127.0.0.1',
      );
    }
  });
  return server;
}
