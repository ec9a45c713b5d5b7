/**
 * A real browser for the log viewer's tests: the system's Chromium (Debian's `chromium` package,
 * or the binary `ODA_CHROMIUM` names) driven by playwright-core. Nothing downloads a browser: when
 * none is installed the browser tests are skipped with a message saying so (`.ci/run` installs one).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page, type Request } from 'playwright-core';

const CANDIDATES = [process.env.ODA_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The Chromium binary to drive, or undefined when none is installed. */
export const chromiumPath: string | undefined = CANDIDATES.find((p): p is string => !!p && existsSync(p));

/** Why the browser tests are skipped, or false when they run. */
export const noBrowser: string | false = chromiumPath
  ? false
  : 'no Chromium found (install Debian\'s "chromium" or set ODA_CHROMIUM): log viewer browser tests skipped';

if (noBrowser) console.warn(`# ${noBrowser}`);

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath!,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
  });
}

/** What a page did that a test may assert on: every request it made, dialogs, errors. */
export interface PageWatch {
  requests: string[];
  dialogs: string[];
  errors: string[];
}

/** A new page (its own context: own session storage) that records what it does. */
export async function watchedPage(
  browser: Browser,
  viewport = { width: 1400, height: 900 },
): Promise<{ page: Page; watch: PageWatch }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const watch: PageWatch = { requests: [], dialogs: [], errors: [] };
  page.on('request', (r: Request) => void watch.requests.push(r.url()));
  page.on('dialog', (d) => {
    watch.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('pageerror', (e) => void watch.errors.push(e.message));
  return { page, watch };
}

/**
 * The log viewer of the gateway at `gatewayUrl` (`/ui` and `hash`) in a new watched page; with
 * `clock`, the page's timers are under the test's control (`page.clock.runFor`). An installed clock
 * also runs on in real time, which a busy machine stretches past the margins a test counts in;
 * `clock: 'paused'` pauses it once the page is loaded, so only `runFor` moves it.
 */
export async function openViewer(
  browser: Browser,
  gatewayUrl: string,
  hash = '',
  opts: { clock?: boolean | 'paused' } = {},
): Promise<{ page: Page; watch: PageWatch }> {
  const opened = await watchedPage(browser);
  if (opts.clock) await opened.page.clock.install();
  await opened.page.goto(`${gatewayUrl}/ui${hash}`);
  if (opts.clock === 'paused') {
    // The clock runs on while the test asks for its time: a busy machine may pass the asked time
    // first ("cannot fast-forward to the past"), so ask again.
    for (let attempt = 1; ; attempt++) {
      const now = await opened.page.evaluate(() => Date.now());
      try {
        await opened.page.clock.pauseAt(now + 500);
        break;
      } catch (err) {
        if (attempt >= 10 || !String(err).includes('to the past')) throw err;
      }
    }
  }
  return opened;
}
