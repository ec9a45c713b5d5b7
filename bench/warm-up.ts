/**
 * Warms a target up before it is measured: a second of load with small chat requests in both
 * formats, streamed and not, so V8 has compiled the hot paths (a gateway in service is warm).
 */
import autocannon from 'autocannon';
import { clientHeaders, PATHS, smallChat } from './bodies.ts';

export async function warmUp(baseUrl: string, seconds = 1): Promise<void> {
  let chat = 0;
  for (const format of ['openai', 'anthropic'] as const) {
    for (const stream of [false, true]) {
      const base = clientHeaders(format);
      await autocannon({
        url: baseUrl + PATHS[format],
        method: 'POST',
        connections: 4,
        duration: seconds / 4,
        headers: base,
        body: JSON.stringify(smallChat(format, stream)),
        setupClient(client) {
          client.setHeaders({ ...base, 'x-session-id': `warm-${process.pid}-${chat++}` });
        },
      });
    }
  }
}
