/**
 * Takes the README's screenshot of the log viewer: a gateway in front of the fake provider, a few
 * chats made by real model calls (images set aside after an image-limit refusal, a tool result
 * trimmed at the compaction point), the page in the system's Chromium.
 *
 *   npx tsx scripts/ui-screenshot.ts [out.png]     (default docs/log-viewer.png)
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway } from '../test/helpers/start-gateway.ts';
import { launchBrowser, noBrowser } from '../test/browser/browser.ts';
import {
  anthropicCall,
  DEMO_MODELS,
  gradientPng,
  longToolOutput,
  openaiCall,
  trimmedToolResultChat,
} from '../test/browser/demo-chats.ts';

const out = process.argv[2] ?? 'docs/log-viewer.png';
if (noBrowser) {
  console.error(noBrowser);
  process.exit(1);
}

// A data dir of a fixed, neutral name, so the set-aside notes in the picture show a plain path.
const dataDir = join(tmpdir(), 'oda-log-viewer-demo');
rmSync(dataDir, { recursive: true, force: true });
const gw = await startGateway({ dataDir, config: { models: DEMO_MODELS }, fake: { imageLimit: 1 } });
try {
  const at = Date.UTC(2026, 10, 30, 14, 5);
  gw.clock.set(at);
  await openaiCall(
    { url: gw.url, session: 'docs-typo' },
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Fix the typo in README' }] },
  );
  gw.clock.set(at + 7 * 60_000);
  await trimmedToolResultChat({ url: gw.url, session: 'fix-ci-run' });
  gw.clock.set(at + 21 * 60_000);

  // A review session: two screenshots (the provider takes one: the older is set aside), then a
  // test run whose long output is trimmed at the compaction point.
  const before = gradientPng(200, 120, [43, 76, 126], [120, 190, 230]);
  const after = gradientPng(200, 120, [200, 90, 40], [250, 210, 120]);
  const review = { url: gw.url, session: 'login-page-review' };
  const turn1 = [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Here is the login page before and after my change. Did anything move?' },
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/png', data: before.toString('base64') },
        },
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/png', data: after.toString('base64') },
        },
      ],
    },
  ];
  await anthropicCall(review, { model: 'small-review', messages: turn1 });
  gw.clock.advance(40_000);
  const log = longToolOutput(700, 'packages/web/src/login.test.ts > keeps the button aligned');
  await anthropicCall(review, {
    model: 'small-review',
    messages: [
      ...turn1,
      { role: 'assistant', content: [{ type: 'text', text: 'Hello from the fake provider.' }] },
      { role: 'user', content: 'Run the UI tests to be sure.' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_run_ui_tests', name: 'run_tests', input: { scope: 'web' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_run_ui_tests', content: log }] },
    ],
  });

  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.goto(`${gw.url}/ui#session=login-page-review`);
  await page.locator('.changed-set-aside .original-image img.thumb').waitFor();
  await page.locator('.event.response').nth(1).waitFor();
  // Show the first turn: the set-aside note beside the two screenshots.
  await page
    .locator('.msg.role-user')
    .first()
    .evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await page.waitForFunction(() =>
    [...document.images].filter((i) => i.getAttribute('src')).every((i) => i.complete && i.naturalWidth > 0),
  );
  await page.waitForTimeout(300);
  await page.screenshot({ path: out });
  await browser.close();
  console.log(`wrote ${out}`);
} finally {
  await gw.close();
  rmSync(dataDir, { recursive: true, force: true });
}
