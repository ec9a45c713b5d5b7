/**
 * An edited request keeps the client's bytes for every value no mechanism changed, inside the
 * edited message or member too (DESIGN: the mechanisms edit the request as sent, in place, so every
 * field they do not own passes through byte for byte). Raw HTTP to a real gateway in front of the
 * fake provider, which records the bytes it received: integers beyond 2^53, `1.0`, integer-like
 * keys in the client's order must reach the provider as the client wrote them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';

const SCHEMA =
  '{"type":"object","properties":{"n":{"type":"integer","maximum":18446744073709551615,"minimum":0.0,"10":"x","a":"y","2":"z"}}}';

async function post(gw: TestGateway, path: string, body: string, session: string): Promise<Response> {
  const res = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body,
  });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
  return res;
}

/** The bytes the provider received last on `path`. */
function received(gw: TestGateway, path: string): string {
  const got = gw.fake.requestsTo(path);
  return got[got.length - 1]!.raw.toString('utf8');
}

describe('prompt caching: a breakpoint on the last tool', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { promptCaching: { mode: 'auto' } } });
  });
  after(() => gw.close());

  test("the tool's schema reaches the provider as the client wrote it", async () => {
    const tools = `[{"name":"t","input_schema":${SCHEMA}}]`;
    const body = `{"model":"cache-test","max_tokens":20,"tools":${tools},"messages":[{"role":"user","content":"hi"}]}`;
    const res = await post(gw, '/v1/messages', body, 'fidelity-tools');
    assert.equal(res.headers.get('x-oda-prompt-caching'), 'breakpoints=2');
    const sent = received(gw, '/v1/messages');
    assert.ok(
      sent.includes(`"tools":[{"name":"t","input_schema":${SCHEMA},"cache_control":{"type":"ephemeral"}}]`),
      sent,
    );
    assert.equal(
      sent,
      body
        .replace(`${SCHEMA}}]`, `${SCHEMA},"cache_control":{"type":"ephemeral"}}]`)
        .replace(
          '"content":"hi"',
          '"content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]',
        ),
    );
  });

  test('a large edited body reaches the provider whole, its untouched bytes as sent', async () => {
    // Over the size from which the edited body goes out as its parts (slices of the client's bytes
    // between the rewritten values), with multi-byte characters across the slices' ends.
    const answer = 'zażółć 😀 東京 '.repeat(12_000);
    const body =
      `{"model":"cache-test", "max_tokens":20,"tools":[{"name":"t","input_schema":${SCHEMA}}],` +
      `"messages":[{"role":"user","content":"start"},{"role":"assistant","content":"${answer}"},` +
      `{"role":"user","content":"and now"}] ,"metadata":{"n":1.0}}`;
    assert.ok(Buffer.byteLength(body) > 256 * 1024);
    const res = await post(gw, '/v1/messages', body, 'fidelity-large-parts');
    assert.equal(res.headers.get('x-oda-prompt-caching'), 'breakpoints=3');
    const marked = (text: string) =>
      `"content":[{"type":"text","text":"${text}","cache_control":{"type":"ephemeral"}}]`;
    assert.equal(
      received(gw, '/v1/messages'),
      body
        .replace(`${SCHEMA}}]`, `${SCHEMA},"cache_control":{"type":"ephemeral"}}]`)
        .replace('"content":"start"', marked('start'))
        .replace('"content":"and now"', marked('and now')),
    );
  });
});

describe('tool-result trimming: the trimmed result keeps the fields it did not trim', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { models: { 'small-*': { contextWindow: 2000 } } } });
  });
  after(() => gw.close());

  const big = 'abcdefghi😀'.repeat(2000);

  test('Anthropic: a big integer beside the trimmed text', async () => {
    const result = `{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text","text":"${big}","x":1.0},{"type":"text","text":"tail"}],"zz":12345678901234567890}`;
    const body =
      '{"model":"small-test","max_tokens":64,"messages":[{"role":"user","content":"go"},' +
      '{"role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"read","input":{"p":1.0}}]},' +
      `{"role":"user","content":[${result},{"type":"text","text":"next","citations":[]}]}]}`;
    const res = await post(gw, '/v1/messages', body, 'fidelity-trim-a');
    assert.equal(res.headers.get('x-oda-trimmed'), '1');
    const sent = received(gw, '/v1/messages');
    const cut = sent.indexOf('[... tool result middle pruned ...]');
    assert.ok(cut > 0, 'the result was trimmed');
    assert.ok(
      sent.includes('"x":1.0},{"type":"text","text":"tail"}],"zz":12345678901234567890}'),
      sent.slice(-300),
    );
    // Everything before the trimmed text is the client's bytes.
    const head = body.indexOf('abcdefghi');
    assert.equal(sent.slice(0, head), body.slice(0, head));
    assert.ok(sent.endsWith(',{"type":"text","text":"next","citations":[]}]}]}'));
  });

  test('Responses: a field of its own on the trimmed function_call_output', async () => {
    const input = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'go' }] },
      { type: 'function_call', call_id: 'call_1', name: 'read', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: big, zz: 0 },
    ];
    const body = JSON.stringify({ model: 'small-test', store: false, input }).replace(
      '"zz":0',
      '"zz":{"a":1.0,"10":2,"n":12345678901234567890}',
    );
    const res = await post(gw, '/v1/responses', body, 'fidelity-trim-r');
    assert.equal(res.headers.get('x-oda-trimmed'), '1');
    const sent = received(gw, '/v1/responses');
    assert.ok(sent.includes('[... tool result middle pruned ...]'), 'the result was trimmed');
    assert.ok(sent.endsWith(',"zz":{"a":1.0,"10":2,"n":12345678901234567890}}]}'), sent.slice(-200));
  });
});

describe('a top-level key the client repeats', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: { models: { 'small-*': { contextWindow: 8000 } }, promptCaching: { mode: 'off' } },
    });
  });
  after(() => gw.close());

  test('an edit keeps the client bytes of every member, and the earlier copy goes out as sent', async () => {
    const big = 'abcdefghij'.repeat(4000);
    const body =
      '{"model":"small-test","max_tokens":64,"metadata":{"user_id":"a"},"temperature":1.0,' +
      '"top_k":12345678901234567890,"messages":[{"role":"user","content":"go"},' +
      '{"role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"read",' +
      '"input":{"n":1.0,"big":12345678901234567890,"s":"\\u00e9"}}]},' +
      `{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"${big}"}]}],` +
      '"metadata":{"user_id":"a"},"x_tail":[1.0,12345678901234567890]}';
    const res = await post(gw, '/v1/messages', body, 'fidelity-repeated-key');
    assert.equal(res.headers.get('x-oda-trimmed'), '1');
    const sent = received(gw, '/v1/messages');
    const parsed = JSON.parse(sent) as { messages: Array<{ content: Array<{ content: string }> }> };
    const trimmed = parsed.messages[2]!.content[0]!.content;
    assert.ok(trimmed.includes('[... tool result middle pruned ...]'), 'the result was trimmed');
    // Only the trimmed text was written again; both copies of the repeated key are as sent.
    assert.equal(sent, body.replace(`"${big}"`, JSON.stringify(trimmed)));
  });
});
