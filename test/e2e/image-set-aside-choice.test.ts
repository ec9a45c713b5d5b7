/**
 * Which images a refusal sets aside (SPEC section 7), end to end: a refusal that names one image
 * takes that image alone, and a count the gateway cannot bring under the limit sets nothing aside
 * for good. The fake provider refuses with the providers' real bodies.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { makePng } from '../../chat-log/test-images.ts';
import { countImages } from '../fake-provider/fake-provider.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';

const ANTHROPIC_HEADERS = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' };

function post(gw: TestGateway, path: string, session: string, body: unknown, headers = {}) {
  return fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session, ...headers },
    body: JSON.stringify(body),
  });
}

async function setAsideOrdinals(gw: TestGateway, session: string): Promise<number[]> {
  return eventsOfType(await sessionEvents(gw.url, session), 'image-set-aside').map((e) => e.ordinal);
}

describe('image set-aside: which images a refusal takes', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());
  beforeEach(() => {
    gw.fake.reset();
    gw.fake.options = {};
  });

  test('refusals that each name one image take those images only, never an older innocent one', async () => {
    const small = (seed: number) => makePng(4, 4, seed).toString('base64');
    const large = (seed: number) => makePng(400, 400, seed).toString('base64');
    const image = (data: string) => ({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data },
    });
    const limit = 1000;
    assert.ok(Buffer.from(small(1), 'base64').length < limit);
    assert.ok(Buffer.from(large(2), 'base64').length > limit);
    gw.fake.options = { maxImageBytes: limit };
    const body = {
      model: 'claude-test',
      max_tokens: 50,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'look' }, image(small(1)), image(large(2))] },
        { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
        { role: 'user', content: [{ type: 'text', text: 'and these' }, image(small(3)), image(large(4))] },
      ],
    };
    const res = await post(gw, '/v1/messages', 'named-images', body, ANTHROPIC_HEADERS);
    assert.equal(res.status, 200, await res.clone().text());
    // Round 1 names the 2nd image, round 2 the 4th: two rounds, one image each.
    assert.equal(res.headers.get('x-oda-images-set-aside'), '2');
    const sent = gw.fake.requestsTo('/v1/messages');
    assert.equal(sent.length, 3);
    assert.deepEqual(
      sent.map((r) => countImages(r.json ?? {}).length),
      [4, 3, 2],
    );
    const last = sent[2]!.json as { messages: { content: { type: string }[] }[] };
    assert.deepEqual(
      last.messages.map((m) => m.content.map((p) => p.type)),
      [['text', 'image', 'text'], ['text'], ['text', 'image', 'text']],
      'the two small images still go; the two large ones are notes',
    );
    assert.deepEqual((await setAsideOrdinals(gw, 'named-images')).sort(), [2, 4]);
  });

  test('computer-use screenshots: a count the gateway cannot lower goes back at once, nothing set aside', async () => {
    // A screenshot set aside keeps a placeholder image in its place, which the provider still
    // counts: setting the four aside could never get under two, and would lose them for good.
    const shot = (seed: number) => `data:image/png;base64,${makePng(8, 8, seed).toString('base64')}`;
    gw.fake.options = { imageLimit: 2 };
    const input: unknown[] = [{ role: 'user', content: [{ type: 'input_text', text: 'use the computer' }] }];
    for (let i = 0; i < 4; i++) {
      input.push({ type: 'computer_call', call_id: `call_${i}`, action: { type: 'screenshot' } });
      input.push({
        type: 'computer_call_output',
        call_id: `call_${i}`,
        output: { type: 'computer_screenshot', image_url: shot(i + 1) },
      });
    }
    const body = { model: 'computer-use-preview', store: false, input };
    const res = await post(gw, '/v1/responses', 'screenshots', body);
    assert.equal(res.status, 400);
    assert.match(await res.text(), /Too many images/);
    assert.equal(res.headers.get('x-oda-images-set-aside'), null);
    assert.equal(gw.fake.requestsTo('/v1/responses').length, 1, 'no round that cannot help');
    assert.deepEqual(await setAsideOrdinals(gw, 'screenshots'), []);

    // With a user image beside them, setting that one aside is enough for a limit of 4.
    gw.fake.reset();
    gw.fake.options = { imageLimit: 4 };
    const withPhoto = {
      ...body,
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: shot(9) }] }, ...input.slice(1)],
    };
    const ok = await post(gw, '/v1/responses', 'screenshots-and-photo', withPhoto);
    assert.equal(ok.status, 200, await ok.clone().text());
    assert.equal(ok.headers.get('x-oda-images-set-aside'), '1');
    const sent = gw.fake.requestsTo('/v1/responses');
    assert.equal(sent.length, 2);
    const outputs = (sent[1]!.json as { input: { type?: string; output?: { image_url?: string } }[] }).input
      .filter((item) => item.type === 'computer_call_output')
      .map((item) => item.output?.image_url);
    assert.deepEqual(outputs, [1, 2, 3, 4].map(shot), 'every screenshot went as it was');
    assert.deepEqual(await setAsideOrdinals(gw, 'screenshots-and-photo'), [1]);
  });
});
