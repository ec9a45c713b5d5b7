/**
 * Attachments on a shared gateway (SPEC section 14): each team's images are stored in a folder of
 * its own, so one team cannot learn by timing whether another already sent an exact image (the
 * write finds no shared copy), and the set-aside note a team's model receives points into that
 * folder. Only real images (PNG, JPEG, WebP, GIF by their first bytes) become files: thousands of
 * tiny base64 "images" are forwarded as sent and kept verbatim in the log, writing no file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { newKey } from '../../server/cli-keys.ts';
import { makePng } from '../../chat-log/test-images.ts';
import { sha256Hex } from '../../lib/sha256.ts';

const research = newKey();
const design = newKey();
const png = makePng(3, 2, 42);
const imagePart = (data: string, mediaType = 'image/png') => ({
  type: 'image',
  source: { type: 'base64', media_type: mediaType, data },
});

function send(gw: TestGateway, key: string, sessionId: string, content: unknown[]) {
  return rawRequest(gw.url, {
    path: '/v1/messages',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': key,
      'x-session-id': sessionId,
    },
    body: JSON.stringify({ model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content }] }),
  });
}

describe('attachments of different teams are stored apart', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        teams: [
          { name: 'research', keys: [research.hash] },
          { name: 'design', keys: [design.hash] },
        ],
        server: { maxImagesPerRequest: 5000 },
      },
      fake: { imageLimit: 0 },
    });
  });
  after(async () => gw.close());

  test('the same image from two teams: two copies in two folders, none shared; each note points to its own', async () => {
    gw.fake.reset();
    const data = png.toString('base64');
    for (const [team, key] of [
      ['research', research.key],
      ['design', design.key],
    ] as const) {
      const r = await send(gw, key, 'same-picture', [{ type: 'text', text: 'look' }, imagePart(data)]);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers['x-oda-images-set-aside'], '1');
      // What the provider received in the repair round: the note naming the team's own copy.
      const resent = JSON.stringify(gw.fake.requests.at(-1)!.json);
      const copy = join(gw.dataDir, 'attachments', 'teams', team, `${sha256Hex(png)}.png`);
      assert.ok(resent.includes(`Read-only copy: ${copy}`), `${team}: ${resent}`);
      assert.ok(existsSync(copy));
    }
    const root = join(gw.dataDir, 'attachments');
    assert.deepEqual(readdirSync(root), ['teams'], 'no shared copy');
    assert.deepEqual(readdirSync(join(root, 'teams')).sort(), ['design', 'research']);
  });

  test('thousands of fake images write no file; provider and log get them as sent', async () => {
    gw.fake.reset();
    gw.fake.options.imageLimit = undefined;
    const fakes = Array.from({ length: 2000 }, (_, i) =>
      imagePart(Buffer.from(`not an image ${i}`).toString('base64')),
    );
    const before = readdirSync(join(gw.dataDir, 'attachments', 'teams', 'research')).length;
    const r = await send(gw, research.key, 'fake-pictures', [{ type: 'text', text: 'many' }, ...fakes]);
    assert.equal(r.status, 200, r.text);
    const sent = gw.fake.requests[0]!.json as {
      messages: Array<{ content: Array<{ source?: { data: string } }> }>;
    };
    assert.deepEqual(
      sent.messages[0]!.content.slice(1).map((p) => p.source?.data),
      fakes.map((p) => p.source.data),
      'forwarded as sent (the provider decides)',
    );
    assert.equal(
      readdirSync(join(gw.dataDir, 'attachments', 'teams', 'research')).length,
      before,
      'no attachment file was written',
    );
    const events = await rawRequest(gw.url, {
      method: 'GET',
      path: '/v1/sessions/fake-pictures/events',
      headers: { 'x-api-key': research.key },
    });
    assert.equal(events.status, 200, events.text);
    const logged = events.text.includes(
      `data:image/png;base64,${Buffer.from('not an image 1999').toString('base64')}`,
    );
    assert.ok(logged, 'the log keeps the data verbatim');
  });
});
