/**
 * How a provider's answer is relayed: a stream whatever the case of its media type, and what the
 * chat log and the call's log line say of answers that failed inside a 200 (a JSON error body, a
 * body that is not JSON, an error event) or of a stream that broke off, and why.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { openaiStream } from '../fake-provider/fake-bodies.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';

/** A promise and the function that settles it: a stream the test holds open mid-way. */
function held(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

describe('a provider stream is relayed as it arrives', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw.close();
  });

  test(
    'a media type in capitals (Text/Event-Stream) is a stream: passed on before it ends, logged whole',
    { timeout: 20_000 },
    async () => {
      const hold = held();
      gw.fake.script({
        sse: openaiStream('gpt-test', ['Hello', ' there']),
        headers: { 'content-type': 'Text/Event-Stream; charset=UTF-8' },
        holdAfter: { events: 2, until: hold.until },
      });
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'k', maxRetries: 0 });
      const stream = await client.chat.completions.create(
        { model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] },
        { headers: { 'x-session-id': 'caps-stream' } },
      );
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        // The provider sends the rest only once the client has had its first words: a stream held
        // whole by the gateway would never get here.
        if (text === 'Hello') hold.release();
      }
      assert.equal(text, 'Hello there');
      const events = await sessionEvents(gw.url, 'caps-stream');
      const answer = eventsOfType(events, 'message').filter((m) => m.role === 'model');
      assert.deepEqual(
        answer.map((m) => m.content),
        [[{ kind: 'text', text: 'Hello there' }]],
      );
      assert.equal(eventsOfType(events, 'response')[0]?.ok, true);
    },
  );
});
