/**
 * A chat whose log is damaged on disk (a line that is no event) is an error a retry cannot change:
 * the gateway answers `500 ODA_ERR_LOG_READ` with `x-should-retry: false`, so an SDK that retries
 * 5xx on its own (both official SDKs do, twice by default) asks once and the provider is never
 * called. File store only: the damage is made in the chat's file.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startGateway, testStoreIsRedis, type TestGateway } from '../helpers/start-gateway.ts';

const SESSION = 'damaged-on-disk';
const first = [{ role: 'user' as const, content: 'first turn' }];

describe(
  'a damaged chat log',
  { skip: testStoreIsRedis ? 'the damage is made in a chat file' : false },
  () => {
    let dataDir: string;
    let gw: TestGateway;
    before(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'oda-damaged-'));
      const writer = await startGateway({ dataDir });
      const res = await fetch(`${writer.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': SESSION },
        body: JSON.stringify({ model: 'gpt-test', messages: first }),
      });
      assert.equal(res.status, 200, await res.text());
      await writer.close();
      // The first event (the user's message) becomes a line that is no event.
      const file = join(dataDir, 'chats', `${SESSION}.jsonl`);
      const lines = readFileSync(file, 'utf8').split('\n');
      assert.ok(lines.length > 3, 'the chat was logged');
      lines[1] = '{"seq":0,"this line was damaged';
      writeFileSync(file, lines.join('\n'));
      gw = await startGateway({ dataDir });
    });
    after(async () => {
      await gw?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    test('the answer says not to retry, and an SDK asks once', async () => {
      let calls = 0;
      const client = new OpenAI({
        apiKey: 'unused',
        baseURL: `${gw.url}/v1`,
        maxRetries: 2,
        defaultHeaders: { 'x-session-id': SESSION },
        fetch: (input: string | URL | Request, init?: RequestInit) => {
          calls++;
          return fetch(input, init);
        },
      });
      const err = await client.chat.completions
        .create({
          model: 'gpt-test',
          messages: [...first, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'again' }],
        })
        .then(
          () => assert.fail('a damaged log cannot be continued'),
          (e: unknown) => e,
        );
      assert.ok(err instanceof OpenAI.APIError, String(err));
      assert.equal(err.status, 500);
      assert.equal((err.error as { code?: string } | undefined)?.code, 'ODA_ERR_LOG_READ');
      assert.equal(err.headers?.get('x-should-retry'), 'false');
      assert.equal(calls, 1, 'the SDK did not retry');
      assert.equal(gw.fake.requests.length, 0, 'nothing went to the provider');

      const read = await fetch(`${gw.url}/v1/sessions/${SESSION}/events`);
      assert.equal(read.status, 500);
      assert.equal(read.headers.get('x-should-retry'), 'false');
    });
  },
);
