/**
 * A body over a megabyte of ASCII is decoded by lib/utf8.ts's faster road (Latin-1), other text by
 * the UTF-8 decoder; what the gateway reads must be exactly the client's text either way: the
 * provider gets the body byte for byte, the chat log holds the text as sent, and a body with an
 * invalid UTF-8 sequence reads as before (U+FFFD in the log, its bytes forwarded as sent).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { getEvents, ofType } from '../helpers/sdk-chat-drivers.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const HEADERS = { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'k' };

/** About `bytes` of text made of `piece`, ending with a marker so the cut is visible. */
const textOf = (piece: string, bytes: number) =>
  `${piece.repeat(Math.ceil(bytes / Buffer.byteLength(piece)))} end`;

describe('large request bodies are read as the client wrote them', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw?.close());

  /** Sends `body` in chat `chat`; asserts the provider got it byte for byte; returns the logged text. */
  async function sendAndLog(chat: string, body: Buffer<ArrayBuffer>): Promise<unknown> {
    const before = gw.fake.requests.length;
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { ...HEADERS, 'x-session-id': chat },
      body,
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.arrayBuffer();
    assert.ok(gw.fake.requests[before]!.raw.equals(body), 'the provider got the body byte for byte');
    const [logged] = ofType(await getEvents(gw.url, chat), 'message');
    return logged?.content;
  }

  const request = (text: string) =>
    JSON.stringify({ model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: text }] });

  const cases: Array<[string, string]> = [
    ['ASCII, 1.2 MB', textOf('plain text with "quotes" and \\ slashes\n', 1_200_000)],
    ['Polish, CJK and emoji, 1.5 MB', textOf('zażółć gęślą jaźń 東京 😀 ', 1_500_000)],
    ['mostly CJK, 0.7 MB', textOf('東京都の天気は晴れです。', 700_000)],
  ];
  for (const [i, [name, text]] of cases.entries()) {
    test(name, async () => {
      const logged = await sendAndLog(`large-text-${i}`, Buffer.from(request(text)));
      assert.deepEqual(logged, [{ kind: 'text', text }]);
    });
  }

  test('an invalid UTF-8 sequence in a large body reads as toString("utf8") reads it', async () => {
    const text = textOf('zażółć 😀 ', 1_100_000);
    const json = request(text);
    // An overlong "/" (C0 AF) inside the text, where a decoder puts U+FFFD for each byte; the
    // provider still gets the bytes as sent.
    const at = json.indexOf(' end');
    const body = Buffer.concat([
      Buffer.from(json.slice(0, at)),
      Buffer.from([0xc0, 0xaf]),
      Buffer.from(json.slice(at)),
    ]);
    const expected = `${text.slice(0, text.length - ' end'.length)}\ufffd\ufffd end`;
    assert.deepEqual(await sendAndLog('large-invalid-utf8', body), [{ kind: 'text', text: expected }]);
  });
});
