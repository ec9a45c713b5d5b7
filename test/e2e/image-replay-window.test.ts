/**
 * The image replay clean-up spares warm caches (SPEC section 11), end to end through the official
 * SDKs: its kept window moves only when the chat's prompt cache is cold, or once more than
 * `chunkImages` images are behind it; while warm, every request goes byte for byte. The window each
 * request used is logged with its response, so a restarted gateway replays it identically, and the
 * chat's savings count what the clean-up removed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePng } from '../../chat-log/test-images.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { chatDriver, getEvents, ofType, type ChatDriver, type Format } from '../helpers/sdk-chat-drivers.ts';
import { FakeProvider } from '../fake-provider/fake-provider.ts';

const MODEL = 'vision-test'; // no known context window: pruning never measures it
const IMG = '[image data removed - already processed by model]';
const TTL_MS = 5 * 60_000;
const formats: Format[] = ['openai', 'anthropic'];

const imagesIn = (body: Record<string, unknown>): number =>
  (JSON.stringify(body).match(/"type":"image(_url)?"/g) ?? []).length;
const removedIn = (body: Record<string, unknown>): number => JSON.stringify(body).split(IMG).length - 1;

/** A user turn with `images` screenshots, answered by the model. */
async function turn(driver: ChatDriver, n: number, images = 0) {
  const parts = [
    { text: `Turn ${n}.` },
    ...Array.from({ length: images }, (_, i) => ({ image: makePng(4 + i, 3, n * 10 + i) })),
  ];
  driver.user(images > 0 ? parts : `Turn ${n}.`);
  return driver.call();
}

describe('image replay window: warm caches are not rewritten', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oda-window-'));
  let fake: FakeProvider;
  let gw: TestGateway;
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({ fakeProvider: fake, dataDir });
  });
  after(async () => {
    await gw.close();
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  for (const format of formats) {
    test(`${format}: warm, the window stays; cold, it moves; a restarted gateway replays it`, async () => {
      const id = `window-${format}`;
      const driver = chatDriver(format, gw.url, fake, MODEL, { headers: { 'x-session-id': id } });
      const start = gw.clock.now();
      await turn(driver, 1, 1);
      await turn(driver, 2);
      await turn(driver, 3, 1);
      await turn(driver, 4);

      // Turn 5: turn 1 is now behind the 3 newest completed turns, but the cache is warm and one
      // image is far from a chunk: the request goes as sent.
      gw.clock.advance(30_000);
      const warm = await turn(driver, 5, 1);
      assert.equal(warm.provider.raw.toString('utf8'), warm.clientBody);
      assert.equal(imagesIn(warm.providerBody), 3);

      // Idle past the TTL: the cache is cold, the window moves to turn 3; turns 1 and 2 are cleaned.
      gw.clock.advance(TTL_MS + 1);
      const cold = await turn(driver, 6, 1);
      assert.equal(removedIn(cold.providerBody), 1, 'the image of turn 1 is not sent again');
      assert.equal(imagesIn(cold.providerBody), 3);

      // Warm again, a new turn: turn 3 is behind the 3 newest now, but the window stays where the
      // cold request put it, so the prefix the provider cached is sent byte for byte.
      const kept = await turn(driver, 7);
      assert.equal(removedIn(kept.providerBody), 1);
      assert.equal(imagesIn(kept.providerBody), 3, "turn 3's image is still sent");

      // Each request's window (its first kept turn) is logged with its response.
      const responses = ofType(await getEvents(gw.url, id), 'response');
      assert.deepEqual(
        responses.map((r) => r.mechanisms?.imageReplayFrom),
        [0, 0, 0, 0, 0, 2, 2],
      );

      // A restarted gateway (same log, cache still warm) replays the window instead of moving it.
      await gw.close();
      gw = await startGateway({ fakeProvider: fake, dataDir });
      gw.clock.set(start + 30_000 + TTL_MS + 1 + 10_000);
      const again = chatDriver(format, gw.url, fake, MODEL, { headers: { 'x-session-id': id } });
      again.messages.push(...driver.messages);
      const replayed = await turn(again, 8);
      assert.equal(removedIn(replayed.providerBody), 1);
      assert.equal(imagesIn(replayed.providerBody), 3);
    });
  }
});

describe('image replay window: a chunk of images moves it on a warm cache', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { pruning: { imageReplay: { chunkImages: 2 } } } });
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: more than chunkImages images behind the window move it`, async () => {
      const id = `chunk-${format}`;
      const driver = chatDriver(format, gw.url, gw.fake, MODEL, { headers: { 'x-session-id': id } });
      await turn(driver, 1, 2);
      await turn(driver, 2);
      await turn(driver, 3);
      await turn(driver, 4);
      // Turn 5, warm: two images behind the window, not more than a chunk of 2.
      const two = await turn(driver, 5);
      assert.equal(two.provider.raw.toString('utf8'), two.clientBody);
      // Turn 6, warm: turn 2 falls behind too, but it has no image: still 2.
      const still = await turn(driver, 6, 1);
      assert.equal(still.provider.raw.toString('utf8'), still.clientBody);
      await turn(driver, 7);
      await turn(driver, 8);
      const nine = await turn(driver, 9);
      assert.equal(nine.provider.raw.toString('utf8'), nine.clientBody);
      // Turn 10, warm: the image of turn 6 is behind as well: 3 > 2, the window moves.
      const moved = await turn(driver, 10);
      assert.equal(removedIn(moved.providerBody), 3);
      assert.equal(imagesIn(moved.providerBody), 0);

      const session = (await (await fetch(`${gw.url}/v1/sessions/${id}`)).json()) as {
        savings: { imageReplay: { chars: number; tokens: number } };
        usage: { answered: number };
      };
      assert.equal(session.usage.answered, 10);
      // 3 images at 8000 estimate characters each, less the text that replaces them.
      assert.equal(session.savings.imageReplay.chars, 3 * (8000 - IMG.length));
    });
  }
});
