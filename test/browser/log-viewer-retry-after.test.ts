/**
 * The log viewer's own reads in a real browser (SPEC section 12) when the gateway asks them to
 * wait: one wait for the page. The sessions list and the open session, read again on the page's
 * timers, are not read again before a 429's `retry-after` is over, whichever of them was refused;
 * pages asked for meanwhile (Newest, Filter) and a session picked and refused go once it is over;
 * the page says so. (The live tail's own wait is in log-viewer-live.test.ts.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page, Route } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { launchBrowser, noBrowser, openViewer, watchedPage } from './browser.ts';
import { openaiCall } from './demo-chats.ts';

/** A team over its requests per minute, as the gateway answers it: asked to wait `seconds`. */
function rateLimited(seconds: number) {
  return (route: Route) =>
    route.fulfill({
      status: 429,
      headers: { 'retry-after': String(seconds) },
      contentType: 'application/json',
      body: JSON.stringify({
        error: {
          message: `team "t" is over its limit of 5 requests per minute; retry in ${seconds} s`,
          type: 'rate_limit_error',
          param: null,
          code: 'ODA_ERR_RATE_LIMITED',
        },
      }),
    });
}

/** A 503 of a gateway whose store is out of reach that asks the page to wait 0 s: try again at once. */
function storeUnavailableNoWait(route: Route) {
  return route.fulfill({
    status: 503,
    headers: { 'retry-after': '0' },
    contentType: 'application/json',
    body: JSON.stringify({
      error: {
        message: 'the chat store is unavailable',
        type: 'api_error',
        param: null,
        code: 'ODA_ERR_STORE_UNAVAILABLE',
      },
    }),
  });
}

/** Runs the page's timers `ms` forward in steps, letting what they start run between steps. */
async function pageTimePasses(page: Page, ms: number, step = 4000): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    await page.clock.runFor(Math.min(step, ms - done));
    await page.waitForTimeout(50);
  }
}

describe('log viewer: reads the gateway asks to wait', { skip: noBrowser, timeout: 120_000 }, () => {
  let gw: TestGateway;
  let browser: Browser;

  before(async () => {
    gw = await startGateway();
    await openaiCall(
      { url: gw.url, session: 'waiting' },
      { model: 'gpt-live', messages: [{ role: 'user', content: 'a rate-limited key' }] },
    );
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  /** Opens the page with its timers under the test's control, paused: only `runFor` moves them. */
  const open = (hash = '') => openViewer(browser, gw.url, hash, { clock: 'paused' });

  test('the list read again after a 429 waits out its retry-after (longer than the 30 s refresh), saying so', async () => {
    const { page, watch } = await open();
    await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).first().waitFor();
    const isList = (u: URL) => u.pathname === '/v1/sessions';
    const reads = () => watch.requests.filter((u) => isList(new URL(u))).length;
    await page.route(isList, rateLimited(45));
    // The 30 s refresh reads the list and is refused: the gateway asks for 45 s.
    const refused = page.waitForResponse((r) => isList(new URL(r.url())) && r.status() === 429);
    await page.clock.runFor(30_000);
    await refused;
    await page.waitForTimeout(100);
    const afterRefusal = reads();
    // 44 s of page time, the next 30 s refresh among them: no read.
    await pageTimePasses(page, 44_000);
    assert.equal(reads(), afterRefusal, 'the list is not read again before the 45 s are over');
    assert.match(
      (await page.locator('#fatal').textContent()) ?? '',
      /^Reading the sessions again in 45 s \(as the gateway asked\): the key is over its requests per minute \(team "t"/,
    );
    assert.equal(await page.locator('#fatal').isVisible(), true);
    // Once the wait is over the list is read again, and shown.
    await page.unroute(isList);
    await pageTimePasses(page, 2_000);
    await page.locator('#fatal').waitFor({ state: 'hidden', timeout: 5000 });
    assert.equal(reads(), afterRefusal + 1);
    assert.equal(await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).count(), 1);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a page opened while the list is refused says so and shows the list once the wait is over', async () => {
    const { page, watch } = await watchedPage(browser);
    // Paused before the page loads: its first read is refused at once, and only runFor moves the
    // clock from there (running on in real time, a busy machine passed the 20 s before the test
    // had counted 19).
    await page.clock.install();
    await page.clock.pauseAt(Date.now() + 1000);
    const isList = (u: URL) => u.pathname === '/v1/sessions';
    const reads = () => watch.requests.filter((u) => isList(new URL(u))).length;
    await page.route(isList, rateLimited(20));
    await page.goto(`${gw.url}/ui`);
    await page
      .locator('#fatal', { hasText: /^Reading the sessions again in 20 s \(as the gateway asked\)/ })
      .waitFor({ timeout: 5000 });
    assert.equal(reads(), 1);
    await pageTimePasses(page, 19_000);
    assert.equal(reads(), 1, 'not read again before the 20 s are over');
    await page.unroute(isList);
    await pageTimePasses(page, 2_000);
    await page
      .locator('#sessions-list .session-id', { hasText: 'waiting' })
      .first()
      .waitFor({ timeout: 5000 });
    assert.equal(reads(), 2);
    assert.equal(await page.locator('#fatal').isVisible(), false);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('the open session read again after a 429 waits out its retry-after, saying so above it; the list waits too', async () => {
    const { page, watch } = await open('#session=waiting');
    await page.locator('#live', { hasText: 'Live' }).waitFor();
    await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).first().waitFor();
    const isSession = (u: URL) => u.pathname === '/v1/sessions/waiting';
    const reads = () => watch.requests.filter((u) => isSession(new URL(u))).length;
    const listReads = () => watch.requests.filter((u) => new URL(u).pathname === '/v1/sessions').length;
    await page.route(isSession, rateLimited(40));
    // The 15 s refresh of the session's tree is refused: the gateway asks for 40 s.
    const refused = page.waitForResponse((r) => isSession(new URL(r.url())) && r.status() === 429);
    await page.clock.runFor(15_000);
    await refused;
    await page.waitForTimeout(100);
    const afterRefusal = reads();
    const listBefore = listReads();
    const note = page.locator('#session-wait');
    // 38 s of page time, two 15 s refreshes and the list's 30 s refresh among them: no read.
    await pageTimePasses(page, 38_000);
    assert.equal(reads(), afterRefusal, 'the session is not read again before the 40 s are over');
    assert.equal(listReads(), listBefore, 'nor is the list: one wait for the page');
    assert.match(
      (await note.textContent()) ?? '',
      /^Reading the session again in 40 s \(as the gateway asked\): the key is over its requests per minute \(team "t"/,
    );
    assert.equal(await note.isVisible(), true);
    await page.unroute(isSession);
    await pageTimePasses(page, 3_000);
    await note.waitFor({ state: 'hidden', timeout: 5000 });
    assert.equal(reads(), afterRefusal + 1);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test("the list's 429 holds the open session's reads too, said above the session, until the wait is over", async () => {
    const { page, watch } = await open('#session=waiting');
    await page.locator('#live', { hasText: 'Live' }).waitFor();
    await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).first().waitFor();
    const isList = (u: URL) => u.pathname === '/v1/sessions';
    const isSession = (u: URL) => u.pathname === '/v1/sessions/waiting';
    const count = (is: (u: URL) => boolean) => watch.requests.filter((u) => is(new URL(u))).length;
    await page.route(isList, rateLimited(45));
    // The list's 30 s refresh is refused: the gateway asks for 45 s.
    const refused = page.waitForResponse((r) => isList(new URL(r.url())) && r.status() === 429);
    await page.clock.runFor(30_000);
    await refused;
    await page.waitForTimeout(100);
    const sessionReads = count(isSession);
    const listReads = count(isList);
    // 44 s of page time, two of the session's 15 s refreshes among them: no read of either.
    await pageTimePasses(page, 44_000);
    assert.equal(count(isSession), sessionReads, "the session is not read before the list's wait is over");
    assert.equal(count(isList), listReads);
    const note = page.locator('#session-wait');
    assert.match(
      (await note.textContent()) ?? '',
      /^Reading the session in \d+ s \(as the gateway asked\): the key is over its requests per minute \(team "t"/,
    );
    assert.equal(await note.isVisible(), true);
    // Once it is over both are read, once.
    await page.unroute(isList);
    await pageTimePasses(page, 2_000);
    await note.waitFor({ state: 'hidden', timeout: 5000 });
    await page.locator('#fatal').waitFor({ state: 'hidden', timeout: 5000 });
    assert.equal(count(isSession), sessionReads + 1);
    assert.equal(count(isList), listReads + 1);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('Filter and Newest clicked during the wait go once it is over, saying so; the latest click wins', async () => {
    const { page, watch } = await open();
    const ids = page.locator('#sessions-list .session-id');
    await ids.filter({ hasText: 'waiting' }).first().waitFor();
    const isList = (u: URL) => u.pathname === '/v1/sessions';
    const lists = () => watch.requests.map((u) => new URL(u)).filter(isList);
    await page.route(isList, rateLimited(45));
    const refused = page.waitForResponse((r) => isList(new URL(r.url())) && r.status() === 429);
    await page.clock.runFor(30_000);
    await refused;
    await page.waitForTimeout(100);
    const before = lists().length;
    // Three clicks while the gateway's 45 s run: a filter, "Newest", another filter.
    await page.fill('#filter-q', 'nothing-matches-this');
    await page.click('#filters button[type=submit]');
    await page.click('#page-first');
    await page.fill('#filter-q', 'waiting');
    await page.click('#filters button[type=submit]');
    await pageTimePasses(page, 40_000);
    assert.equal(lists().length, before, 'no click goes out before the 45 s are over');
    const fatal = page.locator('#fatal');
    assert.match(
      (await fatal.textContent()) ?? '',
      /^Reading the sessions in \d+ s \(as the gateway asked\): the key is over its requests per minute/,
    );
    assert.equal(await fatal.isVisible(), true);
    await page.unroute(isList);
    await pageTimePasses(page, 6_000);
    await fatal.waitFor({ state: 'hidden', timeout: 5000 });
    await page.waitForTimeout(200);
    const after = lists().slice(before);
    assert.deepEqual(
      after.map((u) => u.searchParams.get('id_contains')),
      ['waiting'],
      'one read once the wait is over: the latest click',
    );
    assert.deepEqual(await ids.allTextContents(), ['waiting']);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a session picked in the list and refused with a 429 opens once the wait is over, saying so', async () => {
    const { page, watch } = await open();
    await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).first().waitFor();
    const isSession = (u: URL) => u.pathname === '/v1/sessions/waiting';
    const reads = () => watch.requests.filter((u) => isSession(new URL(u))).length;
    await page.route(isSession, rateLimited(20));
    await page
      .locator('#sessions-list button', { has: page.locator('.session-id', { hasText: /^waiting$/ }) })
      .click();
    const note = page.locator('#session-wait');
    await note
      .filter({
        hasText:
          /^Opening the session again in 20 s \(as the gateway asked\): the key is over its requests per minute \(team "t"/,
      })
      .waitFor({ timeout: 5000 });
    assert.equal(reads(), 1);
    await pageTimePasses(page, 19_000);
    assert.equal(reads(), 1, 'not read again before the 20 s are over');
    await page.unroute(isSession);
    await pageTimePasses(page, 2_000);
    await page.locator('.msg', { hasText: 'a rate-limited key' }).waitFor({ timeout: 5000 });
    assert.equal(await note.isVisible(), false);
    assert.equal(reads(), 2);
    assert.ok(page.url().endsWith('#session=waiting'), page.url());
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a 503 or 429 with retry-after: 0 is read again at once (the list, a picked session), not shown as an error', async () => {
    const { page, watch } = await open();
    await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).first().waitFor();
    const isList = (u: URL) => u.pathname === '/v1/sessions';
    const listReads = () => watch.requests.filter((u) => isList(new URL(u))).length;
    // The 30 s refresh of the list is refused once, asked to wait 0 s.
    await page.route(isList, storeUnavailableNoWait, { times: 1 });
    const refused = page.waitForResponse((r) => isList(new URL(r.url())) && r.status() === 503);
    const readAgain = page.waitForResponse((r) => isList(new URL(r.url())) && r.status() === 200);
    const before = listReads();
    await page.clock.runFor(30_000);
    await refused;
    // A moment of page time (far from the next 30 s refresh): the list is read again, and shown.
    await pageTimePasses(page, 1_000, 250);
    // Counted once its answer is in (a busy machine delivers the page's events late), then a moment
    // more in which no further read may go.
    await readAgain;
    await pageTimePasses(page, 1_000, 250);
    await page.waitForTimeout(200);
    assert.equal(
      listReads(),
      before + 2,
      `the refused read and the one made again at once: ${JSON.stringify(watch.requests)}`,
    );
    assert.equal(await page.locator('#fatal').isVisible(), false, 'no error is shown');
    assert.equal(await page.locator('#sessions-list .session-id', { hasText: 'waiting' }).count(), 1);

    // A session picked and refused with a 429 asking for 0 s opens at once.
    const isSession = (u: URL) => u.pathname === '/v1/sessions/waiting';
    const sessionReads = () => watch.requests.filter((u) => isSession(new URL(u))).length;
    await page.route(isSession, rateLimited(0), { times: 1 });
    const opened = page.waitForResponse((r) => isSession(new URL(r.url())) && r.status() === 200);
    await page
      .locator('#sessions-list button', { has: page.locator('.session-id', { hasText: /^waiting$/ }) })
      .click();
    await pageTimePasses(page, 1_000, 250);
    await page.locator('.msg', { hasText: 'a rate-limited key' }).waitFor({ timeout: 5000 });
    await opened;
    await pageTimePasses(page, 1_000, 250);
    await page.waitForTimeout(200);
    assert.equal(sessionReads(), 2, `refused once, read again at once: ${JSON.stringify(watch.requests)}`);
    assert.equal(await page.locator('#turns .error').count(), 0, 'no error is shown');
    assert.equal(await page.locator('#session-wait').isVisible(), false);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });
});
