import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import {
  anthropicImageChat,
  bytesA,
  bytesC,
  bytesD,
  openaiImageChat,
  urlB,
} from './__fixtures__/image-chats.ts';
import { imageKey } from '../../lib/image-key.ts';

const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

describe('imageKey', () => {
  test('inline images key by their decoded bytes, remote ones by their URL text', () => {
    const expected = [sha(bytesA), sha(urlB), sha(bytesC), sha(bytesD)];
    assert.deepEqual(
      createOpenaiRequestView(openaiImageChat())
        .images()
        .map((i) => imageKey(i.source)),
      expected,
    );
    assert.deepEqual(
      createAnthropicRequestView(anthropicImageChat())
        .images()
        .map((i) => imageKey(i.source)),
      expected,
    );
  });

  test('the key ignores the media type label and base64 line breaks', () => {
    const data = bytesA.toString('base64');
    const wrapped = data.slice(0, 8) + '\n' + data.slice(8);
    assert.equal(
      imageKey({ kind: 'base64', mediaType: 'image/png', data }),
      imageKey({ kind: 'base64', mediaType: 'image/jpeg', data: wrapped }),
    );
    assert.notEqual(imageKey({ kind: 'url', url: urlB }), imageKey({ kind: 'url', url: urlB + '?v=2' }));
  });
});
