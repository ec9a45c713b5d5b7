/**
 * The log viewer's live tail in a real browser (SPEC section 12), as the chat it follows changes
 * under it (new turns counted in the summary, a log removed by hand) and as the gateway asks it
 * to wait (a 429 with retry-after).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { launchBrowser, noBrowser, openViewer } from './browser.ts';
import { openaiCall } from './demo-chats.ts';

describe('log viewer: the live tail', { skip: noBrowser, timeout: 120_000 }, () => {
  let gw: TestGateway;
  let browser: Browser;

  before(async () => {
    gw = await startGateway();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  /** Opens the page with its timers under the test's control, paused: only `runFor` moves them. */
  const open = (hash = '') => openViewer(browser, gw.url, hash, { clock: 'paused' });

  test('a chat whose log is removed while it is followed: the tail stops and says the chat is gone', async () => {
    await openaiCall(
      { url: gw.url, session: 'doomed' },
      { model: 'gpt-live', messages: [{ role: 'user', content: 'soon gone' }] },
    );
    const { page, watch } = await open('#session=doomed');
    await page.locator('.msg', { hasText: 'soon gone' }).waitFor();
    const live = page.locator('#live');
    await live.filter({ hasText: 'Live' }).waitFor();
    rmSync(join(gw.dataDir, 'chats', 'doomed.jsonl'));
    await live.filter({ hasText: 'Not following: the chat is gone' }).waitFor({ timeout: 5000 });
    // Neither the tail nor the session's tree is read again: a minute passes without a read.
    const reads = () =>
      watch.requests.filter((u) =>
        ['/v1/sessions/doomed', '/v1/sessions/doomed/tail'].includes(new URL(u).pathname),
      ).length;
    const before = reads();
    for (let i = 0; i < 4; i++) {
      await page.clock.runFor(15_000);
      await page.waitForTimeout(200);
    }
    assert.equal(reads(), before, 'no read of the gone chat after the badge said so');
    assert.match((await live.textContent()) ?? '', /^Not following: the chat is gone/);
    assert.equal(await page.locator('.msg', { hasText: 'soon gone' }).count(), 1, 'its turns stay shown');
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a 429 with retry-after: the tail waits what the gateway asks, says so, then resumes', async () => {
    await openaiCall(
      { url: gw.url, session: 'busy' },
      { model: 'gpt-live', messages: [{ role: 'user', content: 'a busy key' }] },
    );
    const { page, watch } = await open();
    await page.locator('#sessions-list .session-id', { hasText: 'busy' }).first().waitFor();
    // The key is over its requests per minute: the gateway asks for 40 s, more than the backoff.
    const tailRoute = '**/v1/sessions/busy/tail?*';
    await page.route(tailRoute, (route) =>
      route.fulfill({
        status: 429,
        headers: { 'retry-after': '40' },
        contentType: 'application/json',
        body: JSON.stringify({
          error: {
            message: 'team "t" is over its limit of 5 requests per minute; retry in 40 s',
            type: 'rate_limit_error',
            param: null,
            code: 'ODA_ERR_RATE_LIMITED',
          },
        }),
      }),
    );
    const tails = () => watch.requests.filter((u) => u.includes('/v1/sessions/busy/tail')).length;
    await page.evaluate(() => {
      location.hash = 'session=busy';
    });
    const live = page.locator('#live');
    await live
      .filter({
        hasText:
          /^Reconnecting in 40 s \(as the gateway asked\): the key is over its requests per minute \(team "t"/,
      })
      .waitFor({ timeout: 5000 });
    assert.equal(tails(), 1);
    for (let i = 0; i < 3; i++) {
      await page.clock.runFor(12_000);
      await page.waitForTimeout(100);
    }
    assert.equal(tails(), 1, 'no tail asked for before the 40 s are over');
    await page.unroute(tailRoute);
    await page.clock.runFor(5_000);
    await live.filter({ hasText: 'Live' }).waitFor({ timeout: 5000 });
    assert.equal(tails(), 2);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test("the session's summary follows the live tail: a new model call is counted without a reload", async () => {
    const ask = (messages: Array<{ role: string; content: string }>) =>
      openaiCall({ url: gw.url, session: 'growing' }, { model: 'gpt-live', messages });
    await ask([{ role: 'user', content: 'first ask' }]);
    const { page, watch } = await open('#session=growing');
    await page.locator('#live', { hasText: 'Live' }).waitFor();
    const fact = (name: string) =>
      page.locator('#session-summary .facts dt', { hasText: name }).locator('+ dd');
    assert.equal(await fact('Model calls').textContent(), '1');
    assert.equal(await fact('Tokens out').textContent(), '5');
    // The reader has every read-model value unfolded: the refresh keeps it so.
    await page.locator('#session-summary details.more-facts summary').click();
    await ask([
      { role: 'user', content: 'first ask' },
      { role: 'assistant', content: 'Hello from the fake provider.' },
      { role: 'user', content: 'second ask' },
    ]);
    await page.locator('.event.response').nth(1).waitFor({ timeout: 5000 });
    await page.clock.runFor(6_000);
    await fact('Model calls').filter({ hasText: /^2$/ }).waitFor({ timeout: 5000 });
    assert.equal(await fact('Tokens out').textContent(), '10');
    assert.equal(await fact('Messages').textContent(), '4');
    assert.equal(await page.locator('#session-summary details.more-facts').getAttribute('open'), '');
    // Counted from the session's read models: the log itself was read once, when the page opened.
    assert.equal(
      watch.requests.filter((u) => u.includes('/v1/sessions/growing/events?')).length,
      1,
      'the events are not read again',
    );
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });
});
