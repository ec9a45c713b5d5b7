import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MASK, secretChunkMasker } from './mask-secrets.ts';

const KEY = 'sk-openai-SECRET-0123456789';
const QUOTED = 'sk-abc"def-123456';

/** What the chunk masker gives after each chunk (and at the end), as strings. */
function steps(chunks: readonly (string | Buffer)[], secrets = [KEY, QUOTED]): string[] {
  const make = secretChunkMasker(secrets);
  assert.ok(make);
  const masker = make();
  const given = chunks.map((c) => masker.push(Buffer.from(c))?.toString('utf8') ?? '');
  given.push(masker.end()?.toString('utf8') ?? '');
  return given;
}

describe('secret masking in a byte stream', () => {
  const event = `event: error\ndata: {"error":{"message":"Incorrect API key provided: ${KEY}","q":${JSON.stringify(QUOTED)}}}\n\n`;
  const masked = event.split(KEY).join(MASK).split(JSON.stringify(QUOTED).slice(1, -1)).join(MASK);

  test('a key is masked wherever the chunks cut it, as is or JSON-escaped', () => {
    for (let cut = 0; cut <= event.length; cut++) {
      assert.equal(steps([event.slice(0, cut), event.slice(cut)]).join(''), masked, `cut at ${cut}`);
    }
    // One byte at a time: every cut at once.
    assert.equal(steps([...event]).join(''), masked);
  });

  test('a chunk ending at an event boundary goes on whole, at once; only a possible start of a key waits', () => {
    assert.deepEqual(steps(['data: {"a":1}\n\n', 'data: {"b":2}\n\n'], [KEY]), [
      'data: {"a":1}\n\n',
      'data: {"b":2}\n\n',
      '',
    ]);
    // "sk-op" could begin the key: it waits for the next chunk, and goes on when that shows it is not.
    assert.deepEqual(steps(['tail sk-op', 'en\n\n'], [KEY]), ['tail ', 'sk-open\n\n', '']);
    assert.deepEqual(steps(['ends with sk-op'], [KEY]), ['ends with ', 'sk-op']);
  });

  test('bytes without a key pass unchanged, multi-byte characters included', () => {
    const text = 'data: {"delta":"héllo ✓ 漢字 sk-"}\n\n';
    const b = Buffer.from(text);
    for (let cut = 0; cut <= b.length; cut++) {
      const masker = secretChunkMasker([KEY])!();
      const out = [masker.push(b.subarray(0, cut)), masker.push(b.subarray(cut)), masker.end()];
      assert.equal(Buffer.concat(out.filter((c) => c !== undefined)).toString('utf8'), text, `cut at ${cut}`);
    }
  });

  test('nothing to mask: no masker at all', () => {
    assert.equal(secretChunkMasker([undefined, 'short']), undefined);
  });
});
