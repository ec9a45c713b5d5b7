/**
 * Requests Node's HTTP parser refuses before Express sees them (bad header bytes, headers too
 * large) still get a JSON error body instead of a bare status line. The path is unknown at that
 * point, so the body has both shapes' essentials: OpenAI's `error.message/type/code` and
 * Anthropic's top-level `type: "error"`.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const message = tooLarge
      ? 'request headers are too large'
      : `malformed HTTP request (${err.code ?? 'parse error'})`;
    const body = JSON.stringify({
      type: 'error',
      error: { type: 'invalid_request_error', message, param: null, code: 'ODA_ERR_INVALID_REQUEST' },
    });
    socket.end(
      `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
}
