/**
 * The log viewer in a real browser (SPEC sections 10 and 12) as sessions change while it is open:
 * new conversations of the open session and new sessions show up without a reload, and the live
 * tail says why it stopped or waits.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { launchBrowser, noBrowser, openViewer, watchedPage } from './browser.ts';
import { openaiCall } from './demo-chats.ts';

const CC_SESSION = '99999999-2222-3333-4444-555555555555';

describe(
  'log viewer: sessions that change while the page is open',
  { skip: noBrowser, timeout: 180_000 },
  () => {
    let gw: TestGateway;
    let browser: Browser;
    let ccMain: string;
    let ccSub: string;

    /** A Claude Code request (no x-session-id): the session comes from its own header. */
    async function claudeCode(text: string, extra: Record<string, string> = {}): Promise<string> {
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
          'x-claude-code-session-id': CC_SESSION,
          ...extra,
        },
        body: JSON.stringify({
          model: 'claude-live',
          max_tokens: 50,
          messages: [{ role: 'user', content: text }],
          tools: [{ name: 'Task', input_schema: { type: 'object' } }],
        }),
      });
      await res.text();
      assert.equal(res.status, 200);
      return res.headers.get('x-session-id')!;
    }

    before(async () => {
      gw = await startGateway();
      await openaiCall(
        { url: gw.url, session: 'live-1' },
        { model: 'gpt-live', messages: [{ role: 'user', content: 'q1' }] },
      );
      gw.clock.advance(1000);
      ccMain = await claudeCode('main task');
      gw.clock.advance(1000);
      ccSub = await claudeCode('a sub-agent task', { 'x-claude-code-agent-id': 'agent-abc' });
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await gw?.close();
    });

    /** Opens the page with its timers under the test's control, paused: only `runFor` moves them. */
    const open = (hash = '') => openViewer(browser, gw.url, hash, { clock: 'paused' });

    /** Opens another session, then live-1 again: a new tail of live-1. */
    async function reopen(page: Page): Promise<void> {
      await page.evaluate((id) => {
        location.hash = `session=${encodeURIComponent(id)}`;
      }, ccMain);
      await page.locator('.msg', { hasText: 'main task' }).waitFor();
      await page.evaluate(() => {
        location.hash = 'session=live-1';
      });
    }

    const treeIds = (page: Page) =>
      page.locator('#conversation-tree button.conversation .conversation-id').allTextContents();

    test("the open session's tree shows a branch and a sub-agent made while it is open", async () => {
      const { page, watch } = await open('#session=live-1');
      await page.locator('.msg', { hasText: 'q1' }).waitFor();
      await page.locator('#live', { hasText: 'Live' }).waitFor();
      assert.deepEqual(await treeIds(page), ['live-1']);
      // The client edits the history: the gateway answers in a branch of live-1.
      const branched = await openaiCall(
        { url: gw.url, session: 'live-1' },
        {
          model: 'gpt-live',
          messages: [
            { role: 'user', content: 'q1' },
            { role: 'assistant', content: 'an edited answer' },
            { role: 'user', content: 'q on the branch' },
          ],
        },
      );
      const branch = branched.sessionId!;
      assert.match(branch, /^live-1\./);
      await page.clock.runFor(16_000);
      await page
        .locator('#conversation-tree .conversation-id', { hasText: branch })
        .waitFor({ timeout: 5000 });
      assert.deepEqual(await treeIds(page), ['live-1', branch]);
      assert.equal(
        await page.locator('#conversation-tree button.conversation.selected .conversation-id').textContent(),
        'live-1',
        'the conversation shown stays selected',
      );

      // A Claude Code main session open; a sub-agent starts.
      await page.evaluate((id) => {
        location.hash = `session=${encodeURIComponent(id)}`;
      }, ccMain);
      await page.locator('.msg', { hasText: 'main task' }).waitFor();
      const reads = () =>
        watch.requests.filter((u) => u.endsWith(`/v1/sessions/${encodeURIComponent(ccMain)}`)).length;
      const before = reads();
      const sub = await claudeCode('sub task', { 'x-claude-code-agent-id': 'agent-live' });
      assert.ok(sub.startsWith(`${ccMain}.`) && sub.includes('agent-live'), sub);
      await page.clock.runFor(16_000);
      await page.locator('#conversation-tree .conversation-id', { hasText: sub }).waitFor({ timeout: 5000 });
      assert.ok(
        reads() - before <= 2,
        `the tree is read again a few times a minute, not more (${reads() - before} reads)`,
      );
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('a session made while the page is open shows in the list; "Newest" reads the first page again', async () => {
      const { page, watch } = await open();
      await page.locator('#sessions-list .session-id', { hasText: 'live-1' }).first().waitFor();
      const post = (id: string) =>
        fetch(`${gw.url}/v1/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id }),
        });
      assert.equal((await post('made-while-open')).status, 201);
      await page.clock.runFor(31_000);
      await page
        .locator('#sessions-list .session-id', { hasText: 'made-while-open' })
        .waitFor({ timeout: 5000 });
      assert.equal(await page.locator('#page-first').isDisabled(), false);
      assert.equal((await post('made-later')).status, 201);
      await page.click('#page-first');
      await page.locator('#sessions-list .session-id', { hasText: 'made-later' }).waitFor({ timeout: 5000 });
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('a filter sent while the unfiltered list is read again: the late unfiltered answer is not shown', async () => {
      const { page, watch } = await watchedPage(browser);
      await page.goto(`${gw.url}/ui`);
      const ids = page.locator('#sessions-list .session-id');
      await ids.filter({ hasText: 'live-1' }).first().waitFor();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      // From now on the unfiltered first page answers only once the filtered one is shown.
      await page.route('**/v1/sessions?*', async (route) => {
        if (!new URL(route.request().url()).searchParams.has('id_contains')) await held;
        await route.continue();
      });
      const unfiltered = page.waitForResponse((r) => r.url().endsWith('/v1/sessions?limit=50'));
      await page.click('#page-first');
      await page.fill('#filter-q', 'agent-abc');
      await page.press('#filter-q', 'Enter');
      await page.waitForFunction(
        () => document.querySelectorAll('#sessions-list .session-id').length === 1,
        undefined,
        { timeout: 5000 },
      );
      release();
      await unfiltered;
      // Time for the page to draw the late answer, were it to.
      await page.waitForTimeout(500);
      assert.deepEqual(await ids.allTextContents(), [ccSub], 'the list is the filtered one');
      assert.equal(await page.locator('#page-info').textContent(), 'page 1');
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('the live badge says why the tail stopped or waits: 404 stops, 429 and a log read error back off', async () => {
      const { page, watch } = await open();
      let answer: { status: number; body: string; type: string } = {
        status: 404,
        type: 'application/json',
        body: JSON.stringify({
          error: { message: 'no chat with id "live-1"', type: 'invalid_request_error' },
        }),
      };
      await page.route('**/v1/sessions/live-1/tail?*', (route) =>
        route.fulfill({ status: answer.status, contentType: answer.type, body: answer.body }),
      );
      const tails = () => watch.requests.filter((u) => u.includes('/v1/sessions/live-1/tail')).length;
      await page.evaluate(() => {
        location.hash = 'session=live-1';
      });
      const live = page.locator('#live');
      await live
        .filter({ hasText: 'Not following: the chat is gone (no chat with id "live-1")' })
        .waitFor({ timeout: 5000 });
      await page.clock.runFor(20_000);
      assert.equal(tails(), 1, 'a 404 is not tried again');

      // Over the tail cap: it says so and waits longer each time.
      answer = {
        status: 429,
        type: 'application/json',
        body: JSON.stringify({ error: { message: 'too many calls at once', type: 'rate_limit_error' } }),
      };
      await reopen(page);
      await live
        .filter({ hasText: /^Reconnecting in 4 s: too many live tails open/ })
        .waitFor({ timeout: 5000 });
      const afterFirst = tails();
      await page.clock.runFor(4_100);
      await live
        .filter({ hasText: /^Reconnecting in 8 s: too many live tails open/ })
        .waitFor({ timeout: 5000 });
      assert.equal(tails(), afterFirst + 1);

      // The gateway could not read the log: the badge names the error, not just "Reconnecting…".
      answer = {
        status: 200,
        type: 'text/event-stream',
        body: 'event: ready\ndata: {"next":2}\n\nevent: error\ndata: {"message":"log line 3 is damaged"}\n\n',
      };
      await page.clock.runFor(8_100);
      await live
        .filter({
          hasText: /Reconnecting in \d+ s: the gateway could not read the log: log line 3 is damaged/,
        })
        .waitFor({ timeout: 5000 });
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('a key refused for the live tail asks for a key', async () => {
      const { page, watch } = await open('#session=live-1');
      await page.locator('.msg', { hasText: 'q1' }).waitFor();
      await page.route('**/v1/sessions/live-1/tail?*', (route) =>
        route.fulfill({
          status: 401,
          contentType: 'application/json',
          body: JSON.stringify({ error: { message: 'key required', type: 'authentication_error' } }),
        }),
      );
      // The tail drops (the gateway restarted); the next one is refused.
      await reopen(page);
      await page.locator('#key-panel').waitFor({ timeout: 5000 });
      assert.equal(await page.locator('#main').isVisible(), false);
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('a sub-agent picked in the list shows in its session: the summary, title and address name the session', async () => {
      const { page, watch } = await open();
      // The unfiltered list first: its answer must not land after the filtered one.
      await page.locator('#sessions-list .session-id', { hasText: 'live-1' }).first().waitFor();
      await page.fill('#filter-q', 'agent-abc');
      await page.click('#filters button[type=submit]');
      // The unfiltered list holds the sub-agent too: wait for the filtered answer, one row.
      await page.waitForFunction(
        () => document.querySelectorAll('#sessions-list .session-id').length === 1,
        undefined,
        { timeout: 5000 },
      );
      assert.equal(await page.locator('#sessions-list .session-id').textContent(), ccSub);
      await page.click('#sessions-list .session-open');
      await page.locator('.msg', { hasText: 'a sub-agent task' }).waitFor();
      assert.equal(
        await page.locator('#conversation-title').textContent(),
        `Conversation ${ccSub} (of ${ccMain})`,
      );
      const sessionFact = page.locator('#session-summary .facts dt', { hasText: 'Session' }).locator('+ dd');
      assert.equal(await sessionFact.textContent(), ccMain);
      assert.ok(
        page.url().endsWith(`#session=${encodeURIComponent(ccMain)}&chat=${encodeURIComponent(ccSub)}`),
        page.url(),
      );
      assert.equal(
        await page.locator('#conversation-tree button.conversation.selected .conversation-id').textContent(),
        ccSub,
      );
      // The main conversation, picked in the tree, is the session itself.
      await page.locator('#conversation-tree button.conversation').first().click();
      await page.locator('.msg', { hasText: 'main task' }).waitFor();
      assert.equal(await page.locator('#conversation-title').textContent(), `Conversation ${ccMain}`);
      assert.equal(await sessionFact.textContent(), ccMain);
      assert.ok(page.url().endsWith(`#session=${encodeURIComponent(ccMain)}`), page.url());
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('a 128-character chat id is cut short in the tree, whole in its title; its count stays in view', async () => {
      const id = `${'a'.repeat(60)}.${'b'.repeat(67)}`;
      await openaiCall(
        { url: gw.url, session: id },
        { model: 'gpt-live', messages: [{ role: 'user', content: 'long id' }] },
      );
      const { page, watch } = await open(`#session=${id}`);
      await page.setViewportSize({ width: 1100, height: 800 });
      const node = page.locator('#conversation-tree button.conversation').first();
      await node.waitFor();
      await page.locator('.msg', { hasText: 'long id' }).waitFor();
      assert.equal(await node.getAttribute('title'), id);
      const boxes = await node.evaluate((button) => {
        const b = button.getBoundingClientRect();
        const count = button.querySelector('.muted')!.getBoundingClientRect();
        const tree = document.getElementById('conversation-tree')!.getBoundingClientRect();
        return { button: b.right, count: count.right, countWidth: count.width, tree: tree.right };
      });
      assert.ok(
        boxes.countWidth > 0 && boxes.count <= boxes.button + 0.5,
        `the count is inside the button ${JSON.stringify(boxes)}`,
      );
      assert.ok(boxes.button <= boxes.tree + 0.5, `the button is inside the tree ${JSON.stringify(boxes)}`);
      const widths = await page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        view: document.documentElement.clientWidth,
        panel: document.getElementById('session-panel')!.scrollWidth,
        panelView: document.getElementById('session-panel')!.clientWidth,
      }));
      assert.ok(
        widths.page <= widths.view && widths.panel <= widths.panelView,
        `no sideways scroll ${JSON.stringify(widths)}`,
      );
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('at phone width the list and the session stack, each the page wide, with no sideways scroll', async () => {
      const { page, watch } = await open();
      await page.setViewportSize({ width: 390, height: 844 });
      await page.locator('#sessions-list .session-id', { hasText: 'live-1' }).first().waitFor();
      await page
        .locator('#sessions-list button', { has: page.locator('.session-id', { hasText: /^live-1$/ }) })
        .click();
      await page.locator('.msg', { hasText: 'q1' }).waitFor();
      const layout = await page.evaluate(() => {
        const list = document.getElementById('sessions-list')!.getBoundingClientRect();
        const panel = document.getElementById('session-panel')!.getBoundingClientRect();
        return {
          page: document.documentElement.scrollWidth,
          view: document.documentElement.clientWidth,
          list: list.width,
          listBottom: list.bottom,
          panel: panel.width,
          panelTop: panel.top,
          turns: document.getElementById('turns')!.getBoundingClientRect().height,
        };
      });
      const about = JSON.stringify(layout);
      assert.ok(layout.page <= layout.view, `no sideways scroll ${about}`);
      assert.ok(layout.list >= 350 && layout.panel >= 350, `each the page wide ${about}`);
      assert.ok(layout.panelTop >= layout.listBottom, `the session below the list ${about}`);
      assert.ok(layout.turns >= 300, `the turns have room ${about}`);
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });
  },
);
