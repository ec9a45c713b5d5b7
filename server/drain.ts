/**
 * Draining on shutdown. Closing the listener stops new connections, but a client's keep-alive
 * connection stays open and would carry its next requests to a gateway on its way out, each
 * started late enough to be cut when the grace period ends. Once draining starts, every answer
 * still to come says `connection: close` and its connection closes after it; an answer whose
 * headers already went out (a stream) closes its connection when it ends; and a request that still
 * arrives on an old connection is a 503 with `retry-after` and `connection: close`, in the
 * endpoint's error format, before its body is read: the official SDKs retry both a 503 and a
 * closed connection, on a new connection (to another replica, or to the gateway after its restart).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Socket } from 'node:net';
import { OdaError } from '../lib/errors.ts';

/**
 * Whether the gateway serves, drains (finishes what it has, takes nothing new) or cuts what the
 * grace period left.
 */
export class Drain {
  private state: 'serving' | 'draining' | 'cutting' = 'serving';
  /** Responses in flight, with their connections (a response lets go of its socket when it ends). */
  private readonly inFlight = new Map<Response, Socket | null>();
  /**
   * Calls still at work that write to the chat log (model calls, chat creations). A call outlives
   * its connection: a model call the grace period cuts still logs its failed answer after its socket
   * is gone, which is after the server has closed.
   */
  private calls = 0;
  private readonly whenSettled: Array<() => void> = [];

  /** True once draining started: new requests are refused. */
  get draining(): boolean {
    return this.state !== 'serving';
  }

  /** True once the grace period is over and the remaining connections are being closed. */
  get cutting(): boolean {
    return this.state === 'cutting';
  }

  /** Counts `res` in flight until it closes. */
  track(res: Response): void {
    this.inFlight.set(res, res.socket);
    res.once('close', () => this.inFlight.delete(res));
  }

  /** Starts draining: every response in flight closes its connection when it ends. */
  start(): void {
    if (this.draining) return;
    this.state = 'draining';
    for (const [res, socket] of this.inFlight) closeAfter(res, socket);
  }

  /** The grace period is over: what still runs is cut, and is counted and logged as cut by it. */
  cut(): void {
    this.state = 'cutting';
  }

  /** Counts a call at work until the function it returns is called (once, when the call is over). */
  hold(): () => void {
    this.calls++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.calls === 0) for (const resolve of this.whenSettled.splice(0)) resolve();
    };
  }

  /**
   * Resolves once no call is at work (true), or after `maxMs` (false, with calls still at work):
   * the chat log is closed only after the calls that were cut have written to it.
   */
  settled(maxMs: number): Promise<boolean> {
    if (this.calls === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      // Not unref'd: with the server closed, a call waiting on nothing else would let the process
      // exit before the chat log is closed.
      const timer = setTimeout(() => resolve(false), maxMs);
      this.whenSettled.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Calls still at work. */
  get working(): number {
    return this.calls;
  }
}

/**
 * A handler of a route that writes to the chat log, counted (`Drain.hold`) until it is done: at
 * shutdown the chat log closes after it, also when the grace period closed its connection first.
 */
export function heldAtShutdown(
  drain: Drain,
  handler: (req: Request, res: Response) => Promise<void>,
): (req: Request, res: Response) => Promise<void> {
  return async function held(req, res) {
    const done = drain.hold();
    try {
      await handler(req, res);
    } finally {
      done();
    }
  };
}

/** Ends `res`'s connection after `res`: said in its headers when they are still to go out. */
function closeAfter(res: Response, socket: Socket | null): void {
  if (!res.headersSent) {
    // Node ends the connection after a response that says so.
    res.setHeader('connection', 'close');
    return;
  }
  // Headers already promised keep-alive: close the connection once the response is all out.
  if (res.writableFinished) socket?.destroySoon();
  else res.once('finish', () => socket?.destroySoon());
}

/**
 * Express middleware, early in the chain: while draining, a new request (on a connection opened
 * before) is refused before its body is read; otherwise its response is tracked.
 */
export function refuseWhileDraining(drain: Drain): RequestHandler {
  return function drainGuard(_req: Request, res: Response, next: NextFunction) {
    if (drain.draining) {
      throw new OdaError(
        'ODA_ERR_SHUTTING_DOWN',
        503,
        'the gateway is shutting down; retry the request on a new connection',
        { headers: { connection: 'close', 'retry-after': '1' } },
      );
    }
    drain.track(res);
    next();
  };
}
