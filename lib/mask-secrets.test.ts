import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { MASK, secretStreamMasker } from './mask-secrets.ts';

const KEY = 'sk-openai-SECRET-0123456789';
const QUOTED = 'sk-abc"def-123456';

/** What comes out of the stream masker for `chunks`, as one string, and the chunks it gave. */
async function run(
  chunks: readonly string[],
  secrets = [KEY, QUOTED],
): Promise<{ text: string; out: string[] }> {
  const make = secretStreamMasker(secrets);
  assert.ok(make);
  const out: string[] = [];
  for await (const c of Readable.from(chunks.map((c) => Buffer.from(c))).pipe(make()))
    out.push((c as Buffer).toString('utf8'));
  return { text: out.join(''), out };
}

describe('secret masking in a byte stream', () => {
  const event = `event: error\ndata: {"error":{"message":"Incorrect API key provided: ${KEY}","q":${JSON.stringify(QUOTED)}}}\n\n`;
  const masked = event.split(KEY).join(MASK).split(JSON.stringify(QUOTED).slice(1, -1)).join(MASK);

  test('a key is masked wherever the chunks cut it, as is or JSON-escaped', async () => {
    for (let cut = 0; cut <= event.length; cut++) {
      const { text } = await run([event.slice(0, cut), event.slice(cut)]);
      assert.equal(text, masked, `cut at ${cut}`);
    }
    // One byte at a time: every cut at once.
    assert.equal((await run([...event])).text, masked);
  });

  test('a chunk ending at an event boundary goes on whole, at once; only a possible start of a key waits', async () => {
    /** What the masker gives after each chunk is written (and after the end). */
    async function steps(chunks: readonly string[]): Promise<string[]> {
      const t = secretStreamMasker([KEY])!();
      let given = '';
      t.on('data', (c: Buffer) => (given += c.toString('utf8')));
      const seen: string[] = [];
      for (const c of chunks) {
        await new Promise<void>((resolve) => t.write(Buffer.from(c), () => resolve()));
        seen.push(given);
        given = '';
      }
      await new Promise<void>((resolve) => t.end(resolve));
      seen.push(given);
      return seen;
    }
    assert.deepEqual(await steps(['data: {"a":1}\n\n', 'data: {"b":2}\n\n']), [
      'data: {"a":1}\n\n',
      'data: {"b":2}\n\n',
      '',
    ]);
    // "sk-op" could begin the key: it waits for the next chunk, and goes on when that shows it is not.
    assert.deepEqual(await steps(['tail sk-op', 'en\n\n']), ['tail ', 'sk-open\n\n', '']);
    assert.deepEqual(await steps(['ends with sk-op']), ['ends with ', 'sk-op']);
  });

  test('bytes without a key pass unchanged, multi-byte characters included', async () => {
    const text = 'data: {"delta":"héllo ✓ 漢字 sk-"}\n\n';
    for (let cut = 0; cut <= Buffer.byteLength(text); cut++) {
      const b = Buffer.from(text);
      const make = secretStreamMasker([KEY]);
      const out: Buffer[] = [];
      for await (const c of Readable.from([b.subarray(0, cut), b.subarray(cut)]).pipe(make!()))
        out.push(c as Buffer);
      assert.equal(Buffer.concat(out).toString('utf8'), text, `cut at ${cut}`);
    }
  });

  test('nothing to mask: no transform at all', () => {
    assert.equal(secretStreamMasker([undefined, 'short']), undefined);
  });
});
