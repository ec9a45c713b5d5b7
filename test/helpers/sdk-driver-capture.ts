/**
 * What the SDK chat drivers capture of each call: the bytes the SDK sent (a recording fetch), the
 * response it got, and the request the fake provider received.
 */
import assert from 'node:assert/strict';
import type { FakeProvider, RecordedRequest } from '../fake-provider/fake-provider.ts';

/** A fetch that records the bytes each request carries before passing it on. */
export function capturingFetch(): { fetch: typeof fetch; bodies: string[]; responses: Response[] } {
  const bodies: string[] = [];
  const responses: Response[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    const body = init?.body;
    bodies.push(
      typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body).toString('utf8') : '',
    );
    const res = await fetch(input, init);
    responses.push(res);
    return res;
  };
  return { fetch: wrapped, bodies, responses };
}

/** The status and headers of the last response a capture saw. */
export function lastResponse(capture: { responses: Response[] }): Response {
  const res = capture.responses[capture.responses.length - 1];
  assert.ok(res, 'the SDK made no request');
  return res;
}

export function dataUrl(part: { image: Buffer; mediaType?: string }): string {
  return `data:${part.mediaType ?? 'image/png'};base64,${part.image.toString('base64')}`;
}

export function lastProviderRequest(fake: FakeProvider, path: string): RecordedRequest {
  const got = fake.requestsTo(path);
  const last = got[got.length - 1];
  assert.ok(last, `the fake provider received no request on ${path}`);
  return last;
}
