/**
 * Warms a target up before it is measured: a second of load with small chat requests in both
 * formats, streamed and not, so V8 has compiled the hot paths (a gateway in service is warm). Each
 * connection continues its own chat turn by turn, as clients do (one history sent again and again
 * would be logged as regenerated answers, in branches, which is not the path being measured).
 */
import autocannon from 'autocannon';
import { clientHeaders, PATHS } from './bodies.ts';
import { conversationBodies } from './conversation-load.ts';

export async function warmUp(baseUrl: string, seconds = 1): Promise<void> {
  let chat = 0;
  for (const format of ['openai', 'anthropic'] as const) {
    for (const stream of [false, true]) {
      const base = clientHeaders(format);
      const bodies = conversationBodies(format, stream);
      await autocannon({
        url: baseUrl + PATHS[format],
        method: 'POST',
        connections: 4,
        duration: seconds / 4,
        headers: base,
        body: bodies[0],
        setupClient(client) {
          const id = `warm-${process.pid}-${chat++}`;
          let turn = 0;
          const next = () => {
            const n = turn++;
            client.setHeadersAndBody(
              { ...base, 'x-session-id': `${id}-${Math.floor(n / bodies.length)}` },
              bodies[n % bodies.length]!,
            );
          };
          next();
          client.on('response', next);
        },
      });
    }
  }
}
