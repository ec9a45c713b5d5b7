/**
 * The log viewer's safety in a real browser (SPEC section 12): with teams the page asks for a key
 * and shows only that key's sessions (an admin key shows all), the key never goes into a URL; and
 * chat content full of markup, script, `javascript:` URLs and SVG tricks is shown as text and never
 * runs or loads anything.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { newKey } from '../../server/cli-keys.ts';
import { launchBrowser, noBrowser, watchedPage, type PageWatch } from './browser.ts';
import { openaiCall } from './demo-chats.ts';

const research = newKey();
const design = newKey();
const admin = newKey();

/** Markup that would run, load or navigate if any of it were parsed as HTML or used as a URL. */
const PAYLOADS = [
  '<script>window.__pwned = "script"</script>',
  '<img src=x onerror="window.__pwned=\'img\'">',
  "<svg onload=\"window.__pwned='svg'\"><script>window.__pwned='svg-script'</script></svg>",
  '<svg><animate onbegin="window.__pwned=\'animate\'" attributeName="x" dur="1s"/></svg>',
  '<a href="javascript:window.__pwned=\'link\'">click me</a>',
  '<iframe src="javascript:window.__pwned=\'iframe\'"></iframe>',
  '"><img src=x onerror=alert(1)>',
  '<math><mtext><table><mglyph><style><img src=x onerror=alert(2)>',
  '<style>@import "http://evil.example/x.css"; body{background:url(http://evil.example/bg.png)}</style>',
  '<meta http-equiv="refresh" content="0;url=javascript:alert(3)">',
  '<object data="javascript:alert(4)"></object><embed src="http://evil.example/e.swf">',
  '<base href="http://evil.example/"><link rel="stylesheet" href="http://evil.example/s.css">',
  '<details open ontoggle="window.__pwned=\'details\'">',
  'javascript:alert(5)',
  '{{constructor.constructor("window.__pwned=\'template\'")()}} ${alert(6)}',
];
const HOSTILE = PAYLOADS.join('\n');
const SVG_WITH_SCRIPT = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" onload="window.__pwned=\'svg-file\'"><script>alert(7)</script></svg>',
).toString('base64');
const CALL_ID = "call\"><script>window.__pwned='call-id'</script>";

describe('log viewer safety in a browser', { skip: noBrowser, timeout: 180_000 }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  describe('teams: a key per team, shown only what the key may see', () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({
        config: {
          teams: [
            { name: 'research', keys: [research.hash] },
            { name: 'design', keys: [design.hash] },
          ],
          adminKeys: [admin.hash],
        },
      });
      await openaiCall(
        { url: gw.url, session: 'plans', key: research.key },
        { model: 'gpt-t', messages: [{ role: 'user', content: 'research plans for the quarter' }] },
      );
      gw.clock.advance(1000);
      await openaiCall(
        { url: gw.url, session: 'plans', key: design.key },
        { model: 'gpt-t', messages: [{ role: 'user', content: 'design plans for the quarter' }] },
      );
    });
    after(() => gw?.close());

    async function signIn(page: Page, key: string) {
      await page.fill('#key-input', key);
      await page.click('#key-form button[type=submit]');
    }

    function assertKeyNeverInUrls(watch: PageWatch, page: Page, keys: string[]) {
      for (const key of keys) {
        assert.ok(!page.url().includes(key), 'the key is not in the address');
        assert.deepEqual(
          watch.requests.filter((u) => u.includes(key)),
          [],
          'the key is in no request URL',
        );
      }
    }

    test('the page asks for a key; a wrong one is refused; a team key shows that team only', async () => {
      const { page, watch } = await watchedPage(browser);
      await page.goto(`${gw.url}/ui`);
      await page.locator('#key-panel').waitFor();
      assert.equal(await page.locator('#main').isVisible(), false, 'no sessions before a key');

      await signIn(page, 'oda_not-a-key');
      await page.locator('#key-error', { hasText: 'That key was refused.' }).waitFor();

      await signIn(page, research.key);
      await page.locator('#sessions-list .session-id').first().waitFor();
      assert.deepEqual(await page.locator('#sessions-list .session-id').allTextContents(), [
        't:research:plans',
      ]);
      await page.locator('#sessions-list button').first().click();
      await page.locator('.msg', { hasText: 'research plans for the quarter' }).waitFor();

      // The other team's chat, named in the address, shows nothing of it.
      await page.evaluate(() => {
        location.hash = 'session=t%3Adesign%3Aplans';
      });
      await page.locator('#turns-list .error').waitFor();
      assert.match((await page.locator('#turns-list .error').textContent()) ?? '', /no chat with id/);
      assert.equal(await page.getByText('design plans').count(), 0);

      assertKeyNeverInUrls(watch, page, [research.key, 'oda_not-a-key']);
      const authorized = await page.evaluate(() => sessionStorage.length);
      assert.equal(authorized, 1, 'the key is kept in this tab only');

      await page.click('#sign-out');
      await page.locator('#key-panel').waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'signing out forgets the key');
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });

    test('a key with a character no key has is refused at entry; one stored is treated as refused', async () => {
      const { page, watch } = await watchedPage(browser);
      await page.goto(`${gw.url}/ui`);
      await page.locator('#key-panel').waitFor();
      // A smart quote pasted with the key.
      await signIn(page, `${research.key}\u2019`);
      await page
        .locator('#key-error', { hasText: 'keys are printable ASCII, and this one has U+2019' })
        .waitFor({ timeout: 5000 });
      assert.equal(await page.locator('#fatal').isVisible(), false);
      assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'the bad key is not kept');
      await page.context().close();

      // A key with a zero-width space already in the tab's storage (kept before this check).
      const stored = await watchedPage(browser);
      await stored.page.addInitScript((key) => {
        if (!sessionStorage.getItem('oda.ui.key.seeded')) {
          sessionStorage.setItem('oda.ui.key', key);
          sessionStorage.setItem('oda.ui.key.seeded', '1');
        }
      }, `${research.key}\u200b`);
      await stored.page.goto(`${gw.url}/ui`);
      await stored.page.locator('#key-panel').waitFor({ timeout: 5000 });
      await stored.page.locator('#key-error', { hasText: 'That key was refused.' }).waitFor();
      assert.equal(await stored.page.locator('#fatal').isVisible(), false);
      assert.equal(await stored.page.evaluate(() => sessionStorage.getItem('oda.ui.key')), null);
      await stored.page.reload();
      await stored.page.locator('#key-panel').waitFor({ timeout: 5000 });
      await signIn(stored.page, research.key);
      await stored.page.locator('#sessions-list .session-id', { hasText: 't:research:plans' }).waitFor();
      assert.deepEqual([...watch.errors, ...stored.watch.errors], []);
      await stored.page.context().close();
    });

    test("an admin key shows every team's sessions", async () => {
      const { page, watch } = await watchedPage(browser);
      await page.goto(`${gw.url}/ui`);
      await signIn(page, admin.key);
      await page.locator('#sessions-list .session-id').first().waitFor();
      assert.deepEqual(await page.locator('#sessions-list .session-id').allTextContents(), [
        't:design:plans',
        't:research:plans',
      ]);
      await page.locator('#sessions-list button', { hasText: 't:design:plans' }).click();
      await page.locator('.msg', { hasText: 'design plans for the quarter' }).waitFor();
      assertKeyNeverInUrls(watch, page, [admin.key]);
      await page.context().close();
    });
  });

  describe('hostile chat content is shown as text and never runs', () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway({ fake: { answer: HOSTILE } });
      await openaiCall(
        { url: gw.url, session: 'hostile' },
        {
          model: 'gpt-<img src=x onerror=alert(8)>',
          messages: [
            { role: 'system', content: HOSTILE },
            {
              role: 'user',
              content: [
                { type: 'text', text: HOSTILE },
                { type: 'image_url', image_url: { url: 'http://evil.example/pixel.png' } },
                { type: 'image_url', image_url: { url: "javascript:window.__pwned='image-url'" } },
                { type: 'image_url', image_url: { url: `data:image/svg+xml;base64,${SVG_WITH_SCRIPT}` } },
              ],
            },
            {
              role: 'assistant',
              content: HOSTILE,
              tool_calls: [
                {
                  id: CALL_ID,
                  type: 'function',
                  function: {
                    name: '<img src=x onerror=alert(9)>',
                    arguments: JSON.stringify({ html: HOSTILE }),
                  },
                },
              ],
            },
            { role: 'tool', tool_call_id: CALL_ID, content: HOSTILE },
            { role: 'user', content: `${HOSTILE}\n${'padding line\n'.repeat(800)}` },
          ],
        },
        { 'x-session-cwd': '/home/<svg onload=alert(10)>/project' },
      );
    });
    after(() => gw?.close());

    test('every payload is visible as text; nothing runs, opens a dialog or loads from elsewhere', async () => {
      const { page, watch } = await watchedPage(browser);
      await page.addInitScript(() => {
        const w = window as unknown as { __violations: string[] };
        w.__violations = [];
        document.addEventListener('securitypolicyviolation', (e) =>
          w.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
        );
      });
      await page.goto(`${gw.url}/ui#session=hostile`);
      await page.locator('.msg.role-model .column, .msg.role-model .msg-body').first().waitFor();
      await page.locator('.event.response').waitFor();
      // Open everything that can be opened: long texts, reasoning, originals.
      for (const button of await page.locator('#turns-list button').all()) await button.click();
      for (const summary of await page.locator('#turns-list summary').all()) await summary.click();

      const shown = (await page.locator('#turns-list').textContent()) ?? '';
      for (const payload of PAYLOADS) assert.ok(shown.includes(payload), `shown as text: ${payload}`);
      assert.ok(shown.includes('Remote image (not loaded): http://evil.example/pixel.png'));
      assert.ok(shown.includes("javascript:window.__pwned='image-url'"));
      assert.ok(shown.includes('<img src=x onerror=alert(9)>'), 'the tool name');
      assert.ok(shown.includes(CALL_ID), 'the call id');
      assert.ok(
        ((await page.locator('#session-summary').textContent()) ?? '').includes(
          '/home/<svg onload=alert(10)>/project',
        ),
      );

      const state = await page.evaluate(() => {
        const w = window as unknown as { __pwned?: string; __violations: string[] };
        return {
          pwned: w.__pwned,
          violations: w.__violations,
          scripts: [...document.scripts].map((s) => s.src),
          foreign: document.querySelectorAll(
            'body iframe, body object, body embed, body svg, body math, body style, body meta, body base, body link, a[href], [onerror], [onload], [onclick]',
          ).length,
          images: [...document.images].map((i) => i.getAttribute('src') ?? ''),
        };
      });
      assert.equal(state.pwned, undefined, 'no payload ran');
      assert.deepEqual(watch.dialogs, [], 'no dialog opened');
      assert.deepEqual(state.violations, [], 'nothing even tried to load or run against the CSP');
      assert.deepEqual(state.scripts, [`${gw.url}/ui/app.js`], 'the page runs only its own script');
      assert.equal(state.foreign, 0, 'no element came from chat content');
      assert.deepEqual(state.images, [], 'no image was made from a URL in the chat');
      const elsewhere = watch.requests.filter((u) => !u.startsWith(`${gw.url}/`) && !u.startsWith('blob:'));
      assert.deepEqual(elsewhere, [], 'no request left for another origin');
      assert.deepEqual(watch.errors, []);
      await page.context().close();
    });
  });
});
