import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/start-gateway.ts';
import { bodies, openaiStream } from '../fake-provider/fake-bodies.ts';

describe('metrics and stream idle timeout', () => {
  test('a JSON answer that breaks off is a 502 (not retried by the gateway), and the log says so', async () => {
    const gw = await startGateway({ config: { retries: { maxRetries: 0 } } });
    try {
      const whole = JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] });
      gw.fake.script({ truncated: whole, sent: 10 });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'cut-json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'cut' }] }),
      });
      assert.equal(res.status, 502);
      assert.equal(res.headers.get('x-should-retry'), null);
      assert.equal(res.headers.get('x-oda-attempts'), '1');
      const error = ((await res.json()) as { error: { code: string; message: string } }).error;
      assert.equal(error.code, 'ODA_ERR_UPSTREAM_UNREACHABLE');
      const events = (await (await fetch(`${gw.url}/v1/sessions/cut-json/events`)).json()) as {
        events: Array<{ type: string; status?: number; ok?: boolean; error?: string }>;
      };
      const response = events.events.find((e) => e.type === 'response');
      assert.equal(response?.status, 502, 'the status the client got');
      assert.equal(response?.ok, false);
      assert.equal(response?.error, `answer ended before completion: ${error.message}`);
    } finally {
      await gw.close();
    }
  });

  test('/metrics counts requests, retries by reason and upstream latency', async () => {
    const gw = await startGateway();
    try {
      gw.fake.script({ status: 529, json: bodies.anthropicOverloaded() });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'metrics' }] }),
      });
      assert.equal(res.status, 200);
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      assert.match(text, /oda_requests_total\{route="\/v1\/chat\/completions",status="200"\} 1/);
      assert.match(text, /oda_upstream_retries_total\{reason="status:529"\} 1/);
      // Both attempts got their response headers: the refusal and the answer.
      assert.match(
        text,
        /oda_upstream_latency_seconds_count\{provider="fake-openai",outcome="answered"\} 2\n/,
      );
      assert.doesNotMatch(text, /outcome="failed"/);
    } finally {
      await gw.close();
    }
  });

  test('/metrics times failed attempts too: a provider slow to fail is seen, apart from the answers', async () => {
    const gw = await startGateway({
      config: { timeouts: { firstByteMs: 300 }, retries: { maxRetries: 0 } },
    });
    try {
      gw.fake.script({ hang: true });
      const post = () =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'slow' }] }),
        });
      assert.equal((await post()).status, 504);
      assert.equal((await post()).status, 200);
      const text = await (await fetch(`${gw.url}/metrics`)).text();
      const series = (name: string, outcome: string) =>
        Number(
          new RegExp(`^${name}\\{provider="fake-openai",outcome="${outcome}"\\} (\\S+)$`, 'm').exec(
            text,
          )?.[1],
        );
      assert.equal(series('oda_upstream_latency_seconds_count', 'failed'), 1, text);
      assert.ok(series('oda_upstream_latency_seconds_sum', 'failed') >= 0.3, 'timed to the failure');
      assert.match(
        text,
        /^oda_upstream_latency_seconds_bucket\{le="0.1",provider="fake-openai",outcome="failed"\} 0$/m,
      );
      assert.equal(series('oda_upstream_latency_seconds_count', 'answered'), 1);
      assert.match(text, /# HELP oda_upstream_latency_seconds .*failed \(no answer/);
    } finally {
      await gw.close();
    }
  });

  test('a stream that goes silent longer than timeouts.idleMs is cut, and the log says it was incomplete', async () => {
    const gw = await startGateway({ config: { timeouts: { idleMs: 150 } } });
    try {
      gw.fake.script({ sse: openaiStream('gpt-test', ['a', 'b', 'c']), chunkDelayMs: 600 });
      const res = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'idle-cut' },
        body: JSON.stringify({
          model: 'gpt-test',
          messages: [{ role: 'user', content: 'slow' }],
          stream: true,
        }),
      });
      assert.equal(res.status, 200);
      await assert.rejects(res.text());
      const events = (await (await fetch(`${gw.url}/v1/sessions/idle-cut/events`)).json()) as {
        events: Array<{ type: string; ok?: boolean; error?: string }>;
      };
      const response = events.events.find((e) => e.type === 'response');
      assert.equal(response?.ok, false);
      // Why it ended is in the log: the provider went silent past timeouts.idleMs.
      assert.equal(
        response?.error,
        'stream ended before completion: provider "fake-openai" went silent in the middle of its answer (HTTP 200): provider sent nothing more in time (timeouts.idleMs between two chunks of its answer)',
      );
    } finally {
      await gw.close();
    }
  });
});
