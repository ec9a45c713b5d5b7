/**
 * A tiny recording proxy for the real-client tests: node:http on an ephemeral port, forwarding
 * every request as it came to a target (the gateway, or a fake provider) and recording its method,
 * path, headers and body, with the status the target answered. Answers stream back untouched, so
 * the client sees exactly what the target sent.
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ProxiedRequest {
  method: string;
  /** The request target as the client sent it (path and query). */
  path: string;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  /** Parsed JSON body, or undefined when the body is not a JSON object. */
  json: Record<string, unknown> | undefined;
  /** Status the target answered (undefined while waiting or when it could not be reached). */
  status?: number;
  /** Headers of the target's answer. */
  responseHeaders?: IncomingHttpHeaders;
}

export interface RecordingProxy {
  /** Base URL of the proxy, e.g. http://127.0.0.1:40123 (no trailing slash). */
  url: string;
  readonly requests: ProxiedRequest[];
  /** Requests whose path (without the query) is `path`. */
  requestsTo(path: string): ProxiedRequest[];
  close(): Promise<void>;
}

/** Starts a proxy forwarding to `target` (an http:// origin). */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const to = new URL(target);
  const requests: ProxiedRequest[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const rec: ProxiedRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        raw,
        json: parseObject(raw),
      };
      requests.push(rec);
      const headers = { ...req.headers, host: to.host };
      const upstream = request(
        { host: to.hostname, port: to.port, method: rec.method, path: rec.path, headers },
        (answer) => {
          rec.status = answer.statusCode;
          rec.responseHeaders = answer.headers;
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', (err) => {
        if (!res.headersSent) {
          res.writeHead(502, { 'content-type': 'text/plain' });
          res.end(`recording proxy: ${err.message}`);
        } else res.destroy();
      });
      res.on('close', () => {
        if (!res.writableFinished) upstream.destroy();
      });
      upstream.end(raw);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    requestsTo: (path) => requests.filter((r) => r.path.split('?')[0] === path),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function parseObject(raw: Buffer): Record<string, unknown> | undefined {
  if (raw.length === 0) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw.toString('utf8'));
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
