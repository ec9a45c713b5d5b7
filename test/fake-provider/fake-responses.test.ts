/** The fake provider speaks the Responses API, models and embeddings as the official SDKs expect. */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { readSseText } from '../../lib/sse-reader.ts';
import { createResponsesStreamAccumulator } from '../../providers/responses/responses-stream-accumulator.ts';
import { normalizeResponsesResponse } from '../../providers/responses/normalize.ts';
import { classifyResponsesRefusal } from '../../providers/responses/responses-refusal-classifier.ts';
import { peekResponsesStreamStart } from '../../providers/responses/responses-stream-start.ts';
import { FakeProvider } from './fake-provider.ts';
import { responsesFunctionCall, responsesMessage, responsesReasoning } from './fake-responses.ts';

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

let fake: FakeProvider;
let openai: OpenAI;

before(async () => {
  fake = await new FakeProvider().start();
  openai = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
});
after(() => fake.close());
beforeEach(() => {
  fake.reset();
  fake.options = {};
});

/** The raw SSE text the fake answers a streamed request with. */
async function rawStream(body: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const res = await fetch(`${fake.url}/v1/responses`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  return { status: res.status, text: await res.text() };
}

describe('fake provider: POST /v1/responses', () => {
  test('answers the SDK, not streamed', async () => {
    const response = await openai.responses.create({
      model: 'gpt-5',
      instructions: 'Be brief.',
      input: 'Hi',
    });
    assert.equal(response.output_text, 'Hello from the fake provider.');
    assert.match(response.id, /^resp_[0-9a-f]{48}$/);
    assert.equal(response.status, 'completed');
    assert.equal(response.instructions, 'Be brief.');
    assert.equal(fake.requestsTo('/v1/responses')[0]?.json?.input, 'Hi');
  });

  test('streams the real event sequence, numbered, that folds into the same response', async () => {
    fake.options = { streamPieces: ['Hel', 'lo', ' there'] };
    const stream = await openai.responses.create({ model: 'gpt-5', input: 'Hi', stream: true });
    const types: string[] = [];
    const numbers: number[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      numbers.push(event.sequence_number);
      if (event.type === 'response.output_text.delta') text += event.delta;
    }
    assert.equal(text, 'Hello there');
    assert.deepEqual(
      numbers,
      types.map((_, i) => i),
    );
    assert.deepEqual(types, [
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
  });

  test('scripted items: reasoning, text and a function call, streamed and folded by the gateway accumulator', async () => {
    const output = [
      responsesReasoning('Need the file list.', 'gAAAAABenc'),
      responsesMessage('Listing files.'),
      responsesFunctionCall('shell', '{"command":["ls","-la"],"workdir":"/repo"}', 'call_1'),
    ];
    fake.script({ responses: { output } }, { responses: { output } });
    const { text } = await rawStream({ model: 'gpt-5-codex', input: 'list' });
    const accumulator = createResponsesStreamAccumulator();
    for (const { event, data } of readSseText(text)) accumulator.push(event, data);
    assert.equal(accumulator.ended(), true);
    const plain = await openai.responses.create({ model: 'gpt-5-codex', input: 'list' });
    assert.deepEqual(plain.output, output);
    const streamed = accumulator.result();
    const whole = normalizeResponsesResponse(plain);
    assert.deepEqual(streamed.messages, whole.messages);
    assert.ok(text.includes('"type":"response.function_call_arguments.delta"'));
    assert.ok(text.includes('"type":"response.reasoning_summary_text.delta"'));
  });

  test('a function_call_output round trip reaches the fake as sent', async () => {
    fake.script({ responses: { output: [responsesFunctionCall('shell', '{"command":["pwd"]}', 'call_9')] } });
    const first = await openai.responses.create({ model: 'gpt-5', input: 'where am I?', store: false });
    const call = first.output[0];
    assert.ok(call?.type === 'function_call');
    const second = await openai.responses.create({
      model: 'gpt-5',
      store: false,
      input: [
        { role: 'user', content: 'where am I?' },
        call,
        { type: 'function_call_output', call_id: 'call_9', output: '/repo' },
      ],
    });
    assert.equal(second.output_text, 'Hello from the fake provider.');
    const sent = fake.requestsTo('/v1/responses')[1]?.json?.input as Array<Record<string, unknown>>;
    assert.deepEqual(sent.at(-1), { type: 'function_call_output', call_id: 'call_9', output: '/repo' });
    // store: false responses are not kept.
    await assert.rejects(
      openai.responses.retrieve(first.id),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
  });

  test('refuses too many images and oversize images with the API error bodies', async () => {
    const image = {
      type: 'input_image' as const,
      image_url: `data:image/png;base64,${PNG}`,
      detail: 'auto' as const,
    };
    const input = [
      { role: 'user' as const, content: [{ type: 'input_text' as const, text: 'look' }, image, image] },
    ];
    fake.options = { imageLimit: 1 };
    const many = await openai.responses.create({ model: 'gpt-5', input }).catch((e: unknown) => e);
    assert.ok(many instanceof OpenAI.BadRequestError);
    assert.match(many.message, /2 images provided, but the model supports a maximum of 1 images/);
    fake.options = { maxImageBytes: 10 };
    const large = await openai.responses.create({ model: 'gpt-5', input }).catch((e: unknown) => e);
    assert.ok(large instanceof OpenAI.BadRequestError);
    assert.equal(large.code, 'image_too_large');
    assert.equal(large.param, 'input[0].content[1].image_url');
    assert.deepEqual(classifyResponsesRefusal(400, JSON.stringify({ error: large.error }), 2), {
      kind: 'image-limit',
      imagePath: ['input', 0, 'content', 1],
    });
  });

  test('context overflow: an HTTP 400, or inside the stream before any output', async () => {
    fake.options = { contextLimitChars: 10 };
    const http = await openai.responses
      .create({ model: 'gpt-5', input: 'a long input' })
      .catch((e: unknown) => e);
    assert.ok(http instanceof OpenAI.BadRequestError);
    assert.equal(http.code, 'context_length_exceeded');
    assert.match(http.message, /Your input exceeds the context window of this model/);

    for (const via of ['response.failed', 'error'] as const) {
      fake.options = { contextLimitChars: 10, responsesStreamRefusal: via };
      const { status, text } = await rawStream({ model: 'gpt-5', input: 'a long input' });
      assert.equal(status, 200);
      const events = readSseText(text);
      assert.deepEqual(
        events.map((e) => e.event),
        ['response.created', 'response.in_progress', via],
      );
      const start = peekResponsesStreamStart(events);
      assert.equal(start.kind, 'failed');
      if (start.kind === 'failed') {
        assert.deepEqual(classifyResponsesRefusal(start.status, start.bodyText, 0), {
          kind: 'context-overflow',
        });
      }
    }
  });
});

describe('fake provider: stored responses', () => {
  test('retrieve, input items, input tokens, cancel and delete', async () => {
    const created = await openai.responses.create({ model: 'gpt-5', input: 'Hi', background: false });
    const got = await openai.responses.retrieve(created.id);
    assert.equal(got.id, created.id);
    assert.equal(got.output_text, 'Hello from the fake provider.');
    const items = await openai.responses.inputItems.list(created.id);
    assert.deepEqual(
      items.data.map((i) => (i.type === 'message' ? i.content : undefined)),
      [[{ type: 'input_text', text: 'Hi' }]],
    );
    const tokens = await openai.responses.inputTokens.count({ model: 'gpt-5', input: 'Hello there, fake.' });
    assert.equal(tokens.object, 'response.input_tokens');
    assert.ok(tokens.input_tokens > 0);
    await assert.rejects(
      openai.responses.cancel(created.id),
      (e: unknown) => e instanceof OpenAI.BadRequestError,
    );
    await openai.responses.delete(created.id);
    await assert.rejects(
      openai.responses.retrieve(created.id),
      (e: unknown) => e instanceof OpenAI.NotFoundError,
    );
  });

  test('a previous_response_id continues a stored response; an unknown one is refused', async () => {
    const first = await openai.responses.create({ model: 'gpt-5', input: 'Hi' });
    const next = await openai.responses.create({
      model: 'gpt-5',
      input: 'More',
      previous_response_id: first.id,
    });
    assert.equal(next.previous_response_id, first.id);
    const unknown = await openai.responses
      .create({ model: 'gpt-5', input: 'More', previous_response_id: 'resp_nope' })
      .catch((e: unknown) => e);
    assert.ok(unknown instanceof OpenAI.BadRequestError);
    assert.equal(unknown.param, 'previous_response_id');
  });
});

describe('fake provider: models and embeddings', () => {
  test('OpenAI model list and model, with real-looking ids', async () => {
    const ids: string[] = [];
    for await (const model of openai.models.list()) ids.push(model.id);
    assert.ok(ids.includes('gpt-5') && !ids.includes('*'));
    const model = await openai.models.retrieve('gpt-4.1');
    assert.equal(model.object, 'model');
    await assert.rejects(openai.models.retrieve('gpt-0'), (e: unknown) => e instanceof OpenAI.NotFoundError);
  });

  test("Anthropic's model list when anthropic-version is sent", async () => {
    const anthropic = new Anthropic({ baseURL: fake.url, apiKey: 'sk-ant-test', maxRetries: 0 });
    const models: Array<{ id: string; display_name: string; type: string; created_at: string }> = [];
    for await (const model of anthropic.models.list()) models.push(model);
    const sonnet = models.find((m) => m.id === 'claude-sonnet-4-5-20250929');
    assert.equal(sonnet?.type, 'model');
    assert.equal(sonnet?.display_name, 'Claude Sonnet 4.5');
    assert.match(sonnet?.created_at ?? '', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.equal(fake.requestsTo('/v1/models')[0]?.headers['anthropic-version'] !== undefined, true);
    const one = await anthropic.models.retrieve('claude-haiku-4-5-20251001');
    assert.equal(one.display_name, 'Claude Haiku 4.5');
    await assert.rejects(
      anthropic.models.retrieve('claude-0'),
      (e: unknown) => e instanceof Anthropic.NotFoundError,
    );
  });

  test('embeddings as floats and as base64 (the SDK default)', async () => {
    const viaSdk = await openai.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'] });
    assert.equal(viaSdk.data.length, 2);
    assert.equal(viaSdk.data[0]?.embedding.length, 1536);
    const floats = await openai.embeddings.create({
      model: 'text-embedding-3-small',
      input: 'a',
      encoding_format: 'float',
      dimensions: 8,
    });
    assert.equal(floats.data[0]?.embedding.length, 8);
    const norm = Math.hypot(...(floats.data[0]?.embedding ?? []));
    assert.ok(Math.abs(norm - 1) < 1e-5);
    assert.equal(fake.requestsTo('/v1/embeddings')[0]?.json?.encoding_format, 'base64');
  });
});
