import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatBytes, setAsideNote } from './set-aside-note.ts';

describe('setAsideNote', () => {
  test('names ordinal, media type, dimensions, size and the read-only copy', () => {
    assert.equal(
      setAsideNote({
        ordinal: 3,
        mediaType: 'image/png',
        width: 1024,
        height: 768,
        bytes: 524_288,
        path: 'data/attachments/ab/ab12.png',
      }),
      "[Image #3 set aside (image/png, 1024x768, 512 KB) to fit the model's image limits. Read-only copy: data/attachments/ab/ab12.png]",
    );
  });

  test('a remote image gives its source instead of a copy', () => {
    assert.equal(
      setAsideNote({ ordinal: 2, url: 'https://img.example/b.jpg' }),
      "[Image #2 set aside to fit the model's image limits. Source: https://img.example/b.jpg]",
    );
  });

  test('with both, the copy comes first and the source after', () => {
    assert.equal(
      setAsideNote({ ordinal: 1, mediaType: 'image/jpeg', path: 'a/b.jpg', url: 'https://x/y.jpg' }),
      "[Image #1 set aside (image/jpeg) to fit the model's image limits. Read-only copy: a/b.jpg. Source: https://x/y.jpg]",
    );
  });

  test('unknown facts are left out cleanly', () => {
    assert.equal(setAsideNote({ ordinal: 7 }), "[Image #7 set aside to fit the model's image limits.]");
    assert.equal(
      setAsideNote({ ordinal: 7, mediaType: 'image/gif', bytes: 2_000 }),
      "[Image #7 set aside (image/gif, 2 KB) to fit the model's image limits.]",
    );
    assert.equal(
      setAsideNote({ ordinal: 7, width: 640, height: 480 }),
      "[Image #7 set aside (640x480) to fit the model's image limits.]",
    );
    // Half-known or zero dimensions are no dimensions.
    assert.equal(
      setAsideNote({ ordinal: 7, width: 640 }),
      "[Image #7 set aside to fit the model's image limits.]",
    );
    assert.equal(
      setAsideNote({ ordinal: 7, width: 0, height: 0 }),
      "[Image #7 set aside to fit the model's image limits.]",
    );
    assert.equal(
      setAsideNote({ ordinal: 7, path: '', url: '' }),
      "[Image #7 set aside to fit the model's image limits.]",
    );
  });

  test('a data URL is never copied into the note', () => {
    assert.equal(
      setAsideNote({ ordinal: 1, url: 'data:image/png;base64,iVBORw0KGgo=' }),
      "[Image #1 set aside to fit the model's image limits.]",
    );
  });

  test('sizes read as B, KB and MB', () => {
    assert.equal(formatBytes(0), '0 B');
    assert.equal(formatBytes(1023), '1023 B');
    assert.equal(formatBytes(1024), '1 KB');
    assert.equal(formatBytes(524_288), '512 KB');
    assert.equal(formatBytes(1_572_864), '1.5 MB');
    assert.equal(formatBytes(5 * 1024 * 1024), '5 MB');
    assert.equal(formatBytes(12.4 * 1024 * 1024), '12 MB');
  });
});
