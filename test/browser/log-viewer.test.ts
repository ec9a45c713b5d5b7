/**
 * The log viewer in a real browser (SPEC section 12): what a person sees. The chats are made by
 * real model calls through the gateway (a trimmed tool result, images set aside), except the
 * 2,000-turn one, which is written to the gateway's own chat log directly to keep the test quick.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { launchBrowser, noBrowser, openViewer, watchedPage, type PageWatch } from './browser.ts';
import {
  DEMO_MODELS,
  gradientPng,
  imageSetAsideChat,
  openaiCall,
  trimmedToolResultChat,
} from './demo-chats.ts';
import type { ChatLog } from '../../chat-log/chat-log.ts';

const TRIM_MARKER = '[... tool result middle pruned ...]';

type NewEvents = Parameters<ChatLog['append']>[1];

/** Writes a chat of `turns` user/model turns (with requests and responses) straight into the log. */
async function bigChat(chatLog: ChatLog, id: string, turns: number): Promise<number> {
  await chatLog.createChat({ id });
  let count = 0;
  for (let start = 0; start < turns; start += 250) {
    const batch: Array<NewEvents[number]> = [];
    for (let i = start; i < Math.min(turns, start + 250); i++) {
      const requestId = `req-${i}`;
      batch.push(
        {
          type: 'message',
          role: 'user',
          content: [{ kind: 'text', text: `question ${i}` }],
          source: { kind: 'client' },
        },
        {
          type: 'request',
          requestId,
          format: 'openai',
          provider: 'fake-openai',
          model: 'gpt-long',
          settings: {},
          tools: [],
        },
        {
          type: 'message',
          role: 'model',
          content: [{ kind: 'text', text: `answer ${i}` }],
          source: { kind: 'provider' },
        },
        {
          type: 'response',
          requestId,
          startedAt: 0,
          status: 200,
          ok: true,
          usage: { inputTokens: 100 + i, outputTokens: 7 },
          attempts: 1,
          latencyMs: 12,
        },
      );
    }
    count += (await chatLog.append(id, batch as NewEvents)).length;
  }
  return count;
}

/** The offsets of the `events` reads a page made, in order. */
function eventReads(watch: PageWatch, chat: string): number[] {
  const prefix = `/v1/sessions/${encodeURIComponent(chat)}/events?`;
  return watch.requests
    .filter((u) => u.includes(prefix))
    .map((u) => Number(new URL(u).searchParams.get('offset')));
}

describe('log viewer in a browser', { skip: noBrowser, timeout: 180_000 }, () => {
  let gw: TestGateway;
  let browser: Browser;
  let log: string;
  let bigCount: number;
  let branch: string;

  before(async () => {
    gw = await startGateway({ config: { models: DEMO_MODELS }, fake: { imageLimit: 1 } });
    bigCount = await bigChat(gw.gateway.context.chatLog, 'long-run', 2000);
    gw.clock.advance(60_000);
    // A screenshot in the first of five completed turns: the image replay clean-up leaves it out.
    const shot = gradientPng(120, 80, [30, 120, 60], [200, 240, 160]).toString('base64');
    const history: Array<Record<string, unknown>> = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What does this dialog say?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${shot}` } },
        ],
      },
    ];
    for (let i = 1; i <= 4; i++) {
      history.push(
        { role: 'assistant', content: `answer ${i}` },
        { role: 'user', content: `follow-up ${i}` },
      );
    }
    history.push({ role: 'assistant', content: 'answer 5' }, { role: 'user', content: 'and now?' });
    await openaiCall({ url: gw.url, session: 'old-screens' }, { model: 'gpt-vision', messages: history });
    gw.clock.advance(60_000);
    // A conversation and a branch of it: the second request edits the logged answer.
    const tree = { url: gw.url, session: 'tree-demo' };
    await openaiCall(tree, { model: 'gpt-t', messages: [{ role: 'user', content: 'first question' }] });
    gw.clock.advance(1000);
    const edited = await openaiCall(tree, {
      model: 'gpt-t',
      messages: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'an answer the user edited' },
        { role: 'user', content: 'a question on the edited branch' },
      ],
    });
    branch = edited.sessionId!;
    assert.match(branch, /^tree-demo\./);
    gw.clock.advance(60_000);
    log = await trimmedToolResultChat({ url: gw.url, session: 'fix-ci-run' });
    gw.clock.advance(60_000);
    await imageSetAsideChat({ url: gw.url, session: 'login-review' });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await gw?.close();
  });

  const open = (hash = '') => openViewer(browser, gw.url, hash);

  test('the sessions list shows every session, newest activity first', async () => {
    const { page, watch } = await open();
    const ids = page.locator('#sessions-list .session-id');
    await ids.first().waitFor();
    assert.deepEqual(await ids.allTextContents(), [
      'login-review',
      'fix-ci-run',
      branch,
      'tree-demo',
      'old-screens',
      'long-run',
    ]);
    assert.equal(await page.locator('#key-panel').isVisible(), false, 'an open gateway asks for no key');
    await page.fill('#filter-q', 'fix');
    await page.click('#filters button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('#sessions-list .session-id').length === 1);
    assert.deepEqual(await ids.allTextContents(), ['fix-ci-run']);
    assert.deepEqual(watch.errors, []);
    assert.deepEqual(
      watch.requests.filter((u) => !u.startsWith(`${gw.url}/`)),
      [],
      'the page loads nothing from elsewhere (no CDN, fonts or analytics)',
    );
    await page.context().close();
  });

  test('the list pages through many sessions, 50 at a time, newest first', async () => {
    const many = await startGateway();
    try {
      for (let i = 0; i < 60; i++) {
        many.clock.advance(1000);
        const res = await fetch(`${many.url}/v1/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: `chat-${String(i).padStart(2, '0')}` }),
        });
        assert.equal(res.status, 201);
      }
      const { page } = await watchedPage(browser);
      await page.goto(`${many.url}/ui`);
      const ids = page.locator('#sessions-list .session-id');
      await ids.first().waitFor();
      assert.equal(await ids.count(), 50);
      assert.equal(await ids.first().textContent(), 'chat-59');
      await page.click('#page-next');
      await page.locator('#sessions-list .session-id', { hasText: 'chat-09' }).waitFor();
      assert.deepEqual(
        await ids.allTextContents(),
        Array.from({ length: 10 }, (_, i) => `chat-${String(9 - i).padStart(2, '0')}`),
      );
      assert.equal(await page.locator('#page-next').isDisabled(), true);
      await page.click('#page-first');
      await page.locator('#sessions-list .session-id', { hasText: 'chat-59' }).waitFor();
      await page.context().close();
    } finally {
      await many.close();
    }
  });

  test("a session's conversations as a tree; picking the branch shows its turns", async () => {
    const { page, watch } = await open('#session=tree-demo');
    const nodes = page.locator('#conversation-tree button.conversation');
    await nodes.first().waitFor();
    assert.deepEqual(await nodes.locator('.conversation-id').allTextContents(), ['tree-demo', branch]);
    assert.deepEqual(
      (await nodes.locator('.kind').allTextContents()).map((k) => k.toLowerCase()),
      ['main', 'branch'],
    );
    assert.equal(
      await page.locator('#conversation-tree ul ul button', { hasText: branch }).count(),
      1,
      'nested under main',
    );
    await page.locator('.msg', { hasText: 'first question' }).waitFor();
    assert.equal(await page.getByText('a question on the edited branch').count(), 0);
    await nodes.nth(1).click();
    await page.locator('.msg', { hasText: 'a question on the edited branch' }).waitFor();
    assert.match(
      (await page.locator('#conversation-title').textContent()) ?? '',
      new RegExp(`${branch.replace('.', '\\.')} \\(of tree-demo\\)`),
    );
    assert.ok(page.url().endsWith(`#session=tree-demo&chat=${encodeURIComponent(branch)}`));
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a refused filter shows its error over an empty list; the next good filter clears it', async () => {
    const { page, watch } = await open();
    await page.locator('#sessions-list .session-id').first().waitFor();
    await page.fill('#filter-q', 'x'.repeat(200));
    await page.press('#filter-q', 'Enter');
    await page.locator('#fatal', { hasText: 'id_contains' }).waitFor();
    assert.equal(await page.locator('#sessions-list .session-id').count(), 0);
    await page.fill('#filter-q', 'tree-demo');
    await page.press('#filter-q', 'Enter');
    await page.locator('#sessions-list .session-id', { hasText: 'tree-demo' }).first().waitFor();
    assert.equal(await page.locator('#fatal').isVisible(), false);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('picking another conversation while one still loads shows only the last one picked', async () => {
    const { page, watch } = await open('#session=tree-demo');
    const nodes = page.locator('#conversation-tree button.conversation');
    await page.locator('.msg', { hasText: 'first question' }).waitFor();
    // A slow gateway: each conversation's session detail answers 300 ms late, so both picks wait at once.
    await page.route('**/v1/sessions/tree-demo', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      await route.continue();
    });
    // The branch's own log answers later still: a view left behind would draw over the main one.
    await page.route(`**/v1/sessions/${encodeURIComponent(branch)}/**`, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 600));
      await route.continue();
    });
    await nodes.nth(1).click();
    await page.waitForTimeout(100);
    await nodes.nth(0).click();
    await page.waitForTimeout(1500);
    assert.equal(await page.locator('#conversation-title').textContent(), 'Conversation tree-demo');
    assert.equal(await page.locator('.msg', { hasText: 'a question on the edited branch' }).count(), 0);
    assert.equal(await page.locator('.msg', { hasText: 'first question' }).count(), 1);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a trimmed tool result: the marker in what the model received, the original beside it and on request', async () => {
    const { page, watch } = await open();
    await page.locator('#sessions-list button', { hasText: 'fix-ci-run' }).click();
    const changed = page.locator('.msg .column.received .changed-trimmed');
    await changed.waitFor();
    // The request carried a system prompt, which the log keeps as its digest: the line says so.
    const system = page.locator('.event.request .system-prompt');
    assert.equal(await system.textContent(), ' · a system prompt (kept as its digest, not its text)');
    assert.match((await system.getAttribute('title')) ?? '', /^sha256 [0-9a-f]{64}$/);
    assert.equal(await changed.locator('mark.marker').textContent(), TRIM_MARKER);
    const cps = Array.from(log);
    assert.equal(
      await changed.locator('.effect').textContent(),
      `Trimmed at the compaction point: kept the first 4,096 and last 1,024 of ${cps.length.toLocaleString('en-US')} chars`,
    );
    // The received pieces are the original's head and tail; its middle is not among them.
    const received = (await changed.locator('pre.received').allTextContents()).join('');
    assert.ok(!received.includes('MIDDLE-OF-THE-LOG'));
    assert.ok(received.endsWith(cps.slice(-200).join('')));
    const original = changed.locator('.original-text');
    assert.equal(await original.isVisible(), false);
    await changed.locator('button.show-original').click();
    assert.equal(await original.isVisible(), true);
    assert.equal(await original.textContent(), log);
    assert.ok((await original.textContent())?.includes('FAIL MIDDLE-OF-THE-LOG'));
    // The turn's response says what the trim saved: the same figure as what the response records
    // as removed (the original less the head, the marker and the tail).
    const savings = page.locator('.event.response .savings', { hasText: 'trimmed' });
    const decided = /1 tool result trimmed \(−([\d,]+) chars\)/.exec((await savings.textContent()) ?? '');
    assert.ok(decided);
    const removed = /trimming ([\d,]+) chars/.exec(
      (await page.locator('.event.response .savings.removed').textContent()) ?? '',
    );
    assert.ok(removed);
    assert.equal(decided[1], removed[1]);
    const markerChars = Array.from(`\n\n${TRIM_MARKER}\n\n`).length;
    assert.equal(decided[1], (cps.length - 4096 - 1024 - markerChars).toLocaleString('en-US'));
    // The sent column shows the tool result as the client sent it.
    assert.ok(
      (await page.locator('.msg .column.sent .tool-result').textContent())?.includes('ok 00000 packages'),
    );
    // The session's summary names it and says what the trim removed from what the model received.
    const summary = page.locator('#session-summary');
    assert.equal(
      await summary.locator('.facts dt', { hasText: 'Session' }).locator('+ dd').textContent(),
      'fix-ci-run',
    );
    assert.match(
      (await summary.locator('.saved-line').textContent()) ?? '',
      /^Removed from what the model received: trimming [\d,]+ chars/,
    );
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('images: thumbnails from the attachments, and the set-aside note in place of the image it replaced', async () => {
    const { page, watch } = await open('#session=login-review');
    const card = page.locator('.msg.role-user').first();
    const sent = card.locator('.column.sent img.thumb');
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('.column.sent img.thumb')].filter(
          (i) => (i as HTMLImageElement).naturalWidth === 160,
        ).length === 2,
    );
    assert.equal(await sent.count(), 2);
    for (const src of await sent.evaluateAll((imgs) => imgs.map((i) => (i as HTMLImageElement).src))) {
      assert.match(src, /^blob:/, 'thumbnails are blob: URLs of the attachment route');
    }
    const note = card.locator('.column.received .changed-set-aside');
    assert.match(
      (await note.locator('pre').first().textContent()) ?? '',
      /^\[Image #1 set aside \(image\/png, 160x100, \d+ KB\) to fit the model's image limits\. Read-only copy: .+\.png\]$/,
    );
    assert.equal(
      await note.locator('.effect').textContent(),
      'Image #1 set aside after an image-limit refusal',
    );
    const replaced = note.locator('.original-image img.thumb');
    await page.waitForFunction(() => {
      const img = document.querySelector(
        '.changed-set-aside .original-image img.thumb',
      ) as HTMLImageElement | null;
      return !!img && img.naturalWidth === 160;
    });
    assert.match((await replaced.getAttribute('src')) ?? '', /^blob:/);
    assert.equal(
      await card.locator('.column.received img.thumb').count(),
      2,
      'the kept image and the one the note replaced',
    );
    const attachmentReads = watch.requests.filter((u) => u.includes('/attachments/'));
    assert.ok(
      attachmentReads.length >= 2 &&
        attachmentReads.every((u) => u.startsWith(`${gw.url}/v1/sessions/login-review/attachments/`)),
    );
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a session that fails to load leaves nothing of the one before; picking it again retries', async () => {
    const { page, watch } = await open('#session=fix-ci-run');
    await page.locator('#live', { hasText: 'Live' }).waitFor();
    await page.locator('#session-summary dd', { hasText: 'fix-ci-run' }).first().waitFor();
    await page.evaluate(() => {
      location.hash = 'session=does-not-exist';
    });
    await page.locator('#turns-list .error').waitFor({ timeout: 5000 });
    assert.equal(await page.locator('#session-summary').textContent(), '');
    assert.equal(await page.locator('#conversation-tree').textContent(), '');
    assert.equal(await page.locator('#conversation-title').textContent(), '');
    assert.equal(await page.locator('#live').textContent(), '');
    // A transient failure: the same session picked again loads.
    let failures = 1;
    await page.route(`${gw.url}/v1/sessions/tree-demo`, async (route) => {
      if (failures-- > 0)
        await route.fulfill({
          status: 500,
          contentType: 'application/json',
          body: JSON.stringify({ error: { message: 'simulated failure', type: 'api_error' } }),
        });
      else await route.continue();
    });
    const pick = page.locator('#sessions-list button', {
      has: page.locator('.session-id', { hasText: /^tree-demo$/ }),
    });
    await pick.click();
    await page.locator('#turns-list .error', { hasText: 'simulated failure' }).waitFor({ timeout: 5000 });
    assert.equal(await page.locator('#session-summary').textContent(), '');
    await pick.click();
    await page.locator('.msg', { hasText: 'first question' }).waitFor({ timeout: 5000 });
    assert.equal(await page.locator('#turns-list .error').count(), 0);
    // A refused key asks for one, as the list does.
    await page.route(`${gw.url}/v1/sessions/login-review`, (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ error: { message: 'key required', type: 'authentication_error' } }),
      }),
    );
    await page.locator('#sessions-list button', { hasText: 'login-review' }).click();
    await page.locator('#key-panel').waitFor({ timeout: 5000 });
    assert.equal(await page.locator('#main').isVisible(), false);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test("per-turn tokens count input as the summary does; a pruning pass's estimate is in tokens", async () => {
    const chatLog = gw.gateway.context.chatLog;
    await chatLog.createChat({ id: 'usage-mix' });
    const turn = (
      requestId: string,
      format: string,
      usage: Record<string, number>,
    ): Array<Record<string, unknown>> => [
      {
        type: 'message',
        role: 'user',
        content: [{ kind: 'text', text: `ask ${requestId}` }],
        source: { kind: 'client' },
      },
      { type: 'request', requestId, format, provider: 'fake', model: 'm', settings: {}, tools: [] },
      {
        type: 'message',
        role: 'model',
        content: [{ kind: 'text', text: `answer ${requestId}` }],
        source: { kind: 'provider' },
      },
      { type: 'response', requestId, startedAt: 0, status: 200, ok: true, usage, attempts: 1, latencyMs: 5 },
    ];
    const anthropic = turn('r-anthropic', 'anthropic', {
      inputTokens: 40,
      cacheReadTokens: 2048,
      cacheWriteTokens: 3000,
      cacheWrite1hTokens: 2000,
      outputTokens: 5,
    });
    anthropic.splice(2, 0, {
      type: 'pruning',
      requestId: 'r-anthropic',
      projection: [{ callId: 'c1', action: 'soft', digest: 'a'.repeat(64) }],
      soft: 1,
      cleared: 0,
      charsRemoved: 23484,
      estimateBefore: 14033,
      estimateAfter: 8162,
      changed: true,
    });
    await chatLog.append('usage-mix', [
      ...turn('r-openai', 'openai', { inputTokens: 3000, cacheReadTokens: 2048, outputTokens: 7 }),
      ...turn('r-responses', 'responses', { inputTokens: 500, cacheReadTokens: 100, outputTokens: 3 }),
      ...anthropic,
    ] as unknown as NewEvents);
    const { page, watch } = await open('#session=usage-mix');
    const usage = page.locator('.event.response .usage');
    await usage.nth(2).waitFor();
    assert.deepEqual(await usage.allTextContents(), [
      ' · tokens: in 952 · cache read 2,048 · out 7',
      ' · tokens: in 400 · cache read 100 · out 3',
      ' · tokens: in 40 · cache read 2,048 · cache write 3,000 (1h 2,000) · out 5',
    ]);
    const cache = page
      .locator('#session-summary .facts dt', { hasText: 'Cache read / write' })
      .locator('+ dd');
    assert.equal(await cache.textContent(), '4,196 / 3,000 (1h 2,000)', 'the one-hour writes are told apart');
    const tokensIn = page.locator('#session-summary .facts dt', { hasText: 'Tokens in' }).locator('+ dd');
    assert.equal(await tokensIn.textContent(), '1,392', 'the per-turn figures add up to the summary');
    const pass = page.locator('.event.decision', { hasText: 'Pruning pass' });
    assert.match(
      (await pass.textContent()) ?? '',
      /^✂Pruning pass: 1 soft-trimmed, 0 cleared, −23,484 estimate chars \(estimated 14,033 → 8,162 tokens\)#/,
    );
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('a document: its name, type and size, never its content printed', async () => {
    const doc = Buffer.from('%PDF-1.4\n% quarterly figures\n%%EOF\n');
    const data = doc.toString('base64');
    await openaiCall(
      { url: gw.url, session: 'with-file' },
      {
        model: 'gpt-t',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Summarise the report.' },
              {
                type: 'file',
                file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${data}` },
              },
            ],
          },
        ],
      },
    );
    const { page, watch } = await open('#session=with-file');
    const file = page.locator('.file').first();
    await file.waitFor();
    assert.equal(
      await file.textContent(),
      `File report.pdf · application/pdf · ${doc.length} B · content kept in the log`,
    );
    assert.ok(!(await page.content()).includes(data), 'the data URL is not printed');
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('the image replay clean-up: an image of an old turn shows its placeholder and the image it replaced', async () => {
    const { page, watch } = await open('#session=old-screens');
    const changed = page.locator('.msg.role-user').first().locator('.column.received .changed-image-replay');
    await changed.waitFor();
    await changed.scrollIntoViewIfNeeded(); // thumbnails load as they come into view
    assert.equal(
      await changed.locator('mark.marker').textContent(),
      '[image data removed - already processed by model]',
    );
    assert.equal(
      await changed.locator('.effect').textContent(),
      'Image replay clean-up: image already seen by the model',
    );
    await page.waitForFunction(() => {
      const img = document.querySelector(
        '.changed-image-replay .original-image img.thumb',
      ) as HTMLImageElement | null;
      return !!img && img.naturalWidth === 120;
    });
    assert.equal(await page.locator('.column.received').count(), 1, 'the newer turns went as sent');
    // The provider got the placeholder, not the image.
    const wire = gw.fake.requests.find((r) => r.json?.model === 'gpt-vision')!.json!;
    assert.deepEqual((wire.messages as Array<{ content: unknown }>)[0]!.content, [
      { type: 'text', text: 'What does this dialog say?' },
      { type: 'text', text: '[image data removed - already processed by model]' },
    ]);
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });

  test('live tail: a model call made while the page is open shows up without a reload', async () => {
    const { page } = await open('#session=fix-ci-run');
    await page.locator('#live', { hasText: 'Live' }).waitFor();
    await page.locator('.msg').first().waitFor();
    const before = await page.locator('.msg').count();
    const body = {
      model: 'small-demo',
      messages: [
        { role: 'system', content: 'You are a coding agent. Use the tools to fix failing tests.' },
        { role: 'user', content: 'The CI run is red. Find the failing test and tell me why it fails.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_run_tests',
              type: 'function',
              function: { name: 'run_tests', arguments: '{"scope":"all"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_run_tests', content: log },
        { role: 'assistant', content: 'Hello from the fake provider.' },
        { role: 'user', content: 'Thanks. Now fix it: live follow-up 42.' },
      ],
    };
    const answer = await openaiCall({ url: gw.url, session: 'fix-ci-run' }, body);
    assert.equal(answer.sessionId, 'fix-ci-run', 'the call continued the chat the page shows');
    await page.locator('.msg', { hasText: 'live follow-up 42' }).waitFor();
    await page.locator('.event.response').nth(1).waitFor();
    assert.equal(await page.locator('.msg').count(), before + 2, 'the new user message and the answer');
    await page.context().close();
  });

  test('a 2,000-turn conversation opens on its latest turns and loads earlier ones as you scroll up', async (t) => {
    const started = Date.now();
    const { page, watch } = await open('#session=long-run');
    await page.locator('.msg', { hasText: 'question 1999' }).waitFor();
    t.diagnostic(`latest turns shown ${Date.now() - started} ms after navigation`);
    const first = eventReads(watch, 'long-run');
    assert.equal(first.length, 1, 'one read of events before any scrolling');
    assert.equal(first[0], bigCount - 300, 'that read is the last page of the log');
    assert.equal(
      await page.locator('.msg', { hasText: 'question 1900' }).count(),
      0,
      'earlier turns are not loaded yet',
    );
    assert.ok((await page.locator('.msg').count()) <= 160);
    // Scroll up until an earlier page is loaded and shown.
    for (let i = 0; i < 20 && (await page.locator('.msg', { hasText: 'question 1900' }).count()) === 0; i++) {
      await page.locator('#turns').evaluate((el) => {
        el.scrollTop = 0;
      });
      await page.waitForTimeout(100);
    }
    await page.locator('.msg', { hasText: 'question 1900' }).waitFor();
    const reads = eventReads(watch, 'long-run');
    assert.equal(reads[1], bigCount - 600, 'the next read is the page before');
    assert.equal(
      await page.locator('.msg', { hasText: 'question 0' }).count(),
      0,
      'never the whole log at once',
    );
    await page.context().close();
  });

  test('an earlier page that fails to load says so at the top, and Retry loads it', async () => {
    const { page, watch } = await open('#session=long-run');
    await page.locator('.msg', { hasText: 'question 1999' }).waitFor();
    let failures = 1;
    await page.route(`**/v1/sessions/long-run/events?offset=${bigCount - 600}&*`, async (route) => {
      if (failures-- > 0)
        await route.fulfill({
          status: 500,
          contentType: 'application/json',
          body: JSON.stringify({ error: { message: 'simulated read failure', type: 'api_error' } }),
        });
      else await route.continue();
    });
    const failed = page.locator('#turns-top .error', { hasText: 'Could not load earlier events:' });
    for (let i = 0; i < 20 && (await failed.count()) === 0; i++) {
      await page.locator('#turns').evaluate((el) => {
        el.scrollTop = 0;
      });
      await page.waitForTimeout(100);
    }
    await failed.waitFor({ timeout: 5000 });
    assert.match((await failed.textContent()) ?? '', /simulated read failure/);
    assert.equal(await page.locator('.msg', { hasText: 'question 1900' }).count(), 0);
    await failed.locator('button', { hasText: 'Retry' }).click();
    await page.locator('.msg', { hasText: 'question 1900' }).waitFor({ timeout: 5000 });
    assert.equal(await failed.count(), 0, 'the message goes once the page loads');
    assert.deepEqual(watch.errors, []);
    await page.context().close();
  });
});
