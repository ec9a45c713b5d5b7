import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ChatLog } from './chat-log.ts';
import { FileLogBackend } from './store-file.ts';
import { AttachmentStore } from './attachments.ts';
import { sha256Hex } from '../lib/sha256.ts';
import { ManualClock } from '../lib/clock.ts';
import type { NormalizedMessage } from './pending-message.ts';
import { makeGif, makePng } from './test-images.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

function setup() {
  const dataDir = tempDir('oda-images-');
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const attachments = new AttachmentStore({ dir: path.join(dataDir, 'attachments') });
  const log = new ChatLog({
    backend: new FileLogBackend({ dataDir, clock }),
    attachments,
    clock,
    build: 'test',
  });
  return { attachments, log };
}

describe('ChatLog.storeImages and messageDigest', () => {
  const png = makePng(2, 3);

  test('inline images become attachments (also inside tool results); URLs stay URLs', async () => {
    const { log, attachments } = setup();
    const messages: NormalizedMessage[] = [
      {
        role: 'user',
        content: [
          { kind: 'text', text: 'look' },
          { kind: 'image', source: { kind: 'url', url: `data:image/png;base64,${png.toString('base64')}` } },
          { kind: 'image', source: { kind: 'url', url: 'https://example.com/cat.png' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            kind: 'tool-result',
            callId: 'call_1',
            toolName: 'screenshot',
            failed: false,
            content: [
              { kind: 'text', text: 'shot' },
              {
                kind: 'image',
                source: { kind: 'base64', mediaType: 'image/gif', data: makeGif(5, 4).toString('base64') },
              },
            ],
          },
        ],
      },
    ];
    const stored = await log.storeImages(messages);
    const attachment = {
      sha256: sha256Hex(png),
      mediaType: 'image/png',
      bytes: png.length,
      width: 2,
      height: 3,
    };
    assert.deepEqual(stored[0], {
      role: 'user',
      content: [
        { kind: 'text', text: 'look' },
        { kind: 'image', attachment },
        { kind: 'image', url: 'https://example.com/cat.png' },
      ],
    });
    const result = stored[1]?.content[0];
    assert.equal(result?.kind, 'tool-result');
    const gifPart = result?.kind === 'tool-result' ? result.content[1] : undefined;
    assert.equal(gifPart?.kind === 'image' ? gifPart.attachment?.width : undefined, 5);
    assert.ok(
      fs.readFileSync(attachments.pathFor({ sha256: sha256Hex(png), mediaType: 'image/png' })).equals(png),
    );
    // The stored messages are valid v4 message events.
    await log.createChat({ id: 'img' });
    const appended = await log.append(
      'img',
      stored.map((m) => ({ type: 'message' as const, ...m })),
    );
    assert.equal(appended.length, 2);
  });

  test('inline data that is not a real image, or not base64, is kept verbatim in the log and never becomes a file', async () => {
    const { log, attachments } = setup();
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>');
    const fake = Buffer.from('not a png at all, whatever the media type says');
    const [m] = await log.storeImages([
      {
        role: 'user',
        content: [
          {
            kind: 'image',
            source: { kind: 'base64', mediaType: 'image/svg+xml', data: svg.toString('base64') },
          },
          { kind: 'image', source: { kind: 'url', url: `data:image/png;base64,${fake.toString('base64')}` } },
          { kind: 'image', source: { kind: 'base64', mediaType: 'image/png', data: '%%%not base64' } },
        ],
      },
    ]);
    assert.deepEqual(m?.content, [
      { kind: 'image', url: `data:image/svg+xml;base64,${svg.toString('base64')}` },
      { kind: 'image', url: `data:image/png;base64,${fake.toString('base64')}` },
      { kind: 'image', url: 'data:image/png;base64,%%%not base64' },
    ]);
    assert.equal(fs.existsSync(attachments.dir), false, 'no file was written');
  });

  test('a team’s images go to its own folder', async () => {
    const { log, attachments } = setup();
    const [m] = await log.storeImages(
      [
        {
          role: 'user',
          content: [
            {
              kind: 'image',
              source: { kind: 'base64', mediaType: 'image/png', data: png.toString('base64') },
            },
          ],
        },
      ],
      'research',
    );
    const attachment = (m?.content[0] as { attachment: { sha256: string } }).attachment;
    assert.equal(attachment.sha256, sha256Hex(png));
    assert.deepEqual(fs.readdirSync(path.join(attachments.dir, 'teams', 'research')), [
      `${sha256Hex(png)}.png`,
    ]);
    assert.deepEqual(fs.readdirSync(attachments.dir), ['teams'], 'nothing in the shared folder');
  });

  test('the same image sent as a data URL or as Anthropic base64 digests the same; key order never matters', async () => {
    const { log } = setup();
    const [a, b] = await log.storeImages([
      {
        role: 'user',
        content: [
          { kind: 'image', source: { kind: 'url', url: `data:image/png;base64,${png.toString('base64')}` } },
        ],
      },
      {
        role: 'user',
        content: [
          { kind: 'image', source: { kind: 'base64', mediaType: 'image/png', data: png.toString('base64') } },
        ],
      },
    ]);
    assert.ok(a && b);
    assert.equal(log.messageDigest(a), log.messageDigest(b));
    const call = { kind: 'tool-call' as const, id: 'c1', name: 'ls', args: '{}' };
    const reordered = { args: '{}', name: 'ls', id: 'c1', kind: 'tool-call' as const };
    assert.equal(
      log.messageDigest({ role: 'model', content: [call] }),
      log.messageDigest({ content: [reordered], role: 'model' }),
    );
    assert.notEqual(
      log.messageDigest({ role: 'model', content: [call] }),
      log.messageDigest({ role: 'user', content: [call] }),
    );
    assert.match(log.messageDigest(a), /^[0-9a-f]{64}$/);
  });
});
