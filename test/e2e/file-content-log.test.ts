/**
 * Files in the chat log (SPEC section 6: "Everything the model saw is in it"): a document, file or
 * audio part sent inline is logged with its content (its data URL, the size and SHA-256 of its
 * bytes), so an edited document is an edited message, and a chat logged before file parts held
 * their content still continues in place. Official SDKs -> gateway -> fake provider.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import type { ContentPart, Event, NewEvent } from '../../chat-log/format/current.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { getEvents, ofType } from '../helpers/sdk-chat-drivers.ts';

type Format = 'openai' | 'anthropic';
const formats: Format[] = ['openai', 'anthropic'];
const ANSWER = 'Hello from the fake provider.';

const pdf = (label: string): Buffer => Buffer.from(`%PDF-1.4\n% ${label}\n%%EOF\n`);
const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** A user message holding a question and the document `doc`, in the format's wire form. */
function userWithDocument(format: Format, doc: Buffer): Record<string, unknown> {
  const data = doc.toString('base64');
  return format === 'openai'
    ? {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarise the report.' },
          {
            type: 'file',
            file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${data}` },
          },
        ],
      }
    : {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarise the report.' },
          {
            type: 'document',
            title: 'report.pdf',
            source: { type: 'base64', media_type: 'application/pdf', data },
          },
        ],
      };
}

/** Sends `messages` with `x-session-id: session`; the chat id the gateway answers with. */
async function send(gw: TestGateway, format: Format, session: string, messages: unknown[]): Promise<string> {
  const headers = { 'x-session-id': session };
  if (format === 'openai') {
    const client = new OpenAI({
      baseURL: `${gw.url}/v1`,
      apiKey: 'k',
      maxRetries: 0,
      defaultHeaders: headers,
    });
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-test', messages: messages as OpenAI.ChatCompletionMessageParam[] })
      .withResponse();
    assert.equal(data.choices[0]?.message.content, ANSWER);
    return response.headers.get('x-session-id')!;
  }
  const client = new Anthropic({ baseURL: gw.url, apiKey: 'k', maxRetries: 0, defaultHeaders: headers });
  const { data, response } = await client.messages
    .create({ model: 'claude-test', max_tokens: 64, messages: messages as Anthropic.MessageParam[] })
    .withResponse();
  assert.deepEqual(
    data.content.map((b) => (b.type === 'text' ? b.text : b.type)),
    [ANSWER],
  );
  return response.headers.get('x-session-id')!;
}

const fileParts = (events: readonly Event[]): Array<Extract<ContentPart, { kind: 'file' }>> =>
  ofType(events, 'message').flatMap((m) => m.content.filter((p) => p.kind === 'file'));

const userTexts = (events: readonly Event[]): string[] =>
  ofType(events, 'message')
    .filter((m) => m.role === 'user')
    .flatMap((m) => m.content.flatMap((p) => (p.kind === 'text' ? [p.text] : [])));

describe('files in the chat log', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: a document is logged with its content; the same document continues the chat, an edited one does not`, async () => {
      const session = `docs-${format}`;
      const docA = pdf('first draft');
      const docB = pdf('second draft');
      assert.equal(await send(gw, format, session, [userWithDocument(format, docA)]), session);

      const logged = fileParts(await getEvents(gw.url, session));
      assert.deepEqual(logged, [
        {
          kind: 'file',
          name: 'report.pdf',
          mediaType: 'application/pdf',
          url: `data:application/pdf;base64,${docA.toString('base64')}`,
          sha256: sha256(docA),
          bytes: docA.length,
        },
      ]);

      // The same history with the same document: the chat goes on in place.
      const answer = { role: 'assistant', content: ANSWER };
      const again = [userWithDocument(format, docA), answer, { role: 'user', content: 'Shorter.' }];
      assert.equal(await send(gw, format, session, again), session);
      const continued = await getEvents(gw.url, session);
      assert.deepEqual(userTexts(continued), ['Summarise the report.', 'Shorter.']);
      assert.equal(fileParts(continued).length, 1, 'the document is logged once');

      // The same history with another document in its first message is another conversation: it
      // never lands in this chat's log, which keeps saying the model saw the first draft.
      const edited = [userWithDocument(format, docB), answer, { role: 'user', content: 'Longer.' }];
      const other = await send(gw, format, session, edited);
      assert.notEqual(other, session);
      const otherEvents = await getEvents(gw.url, other);
      assert.deepEqual(
        fileParts(otherEvents).map((p) => p.sha256),
        [sha256(docB)],
      );
      assert.deepEqual(userTexts(otherEvents), ['Summarise the report.', 'Longer.']);
      const parent = await getEvents(gw.url, session);
      assert.deepEqual(parent, continued, 'the first chat is unchanged');
    });

    test(`${format}: a chat logged before files held their content continues in place`, async () => {
      // The events a build before this change logged for one turn: the file part without content.
      const source = `docs-new-${format}`;
      const doc = pdf('legacy');
      await send(gw, format, source, [userWithDocument(format, doc)]);
      const legacy = `docs-legacy-${format}`;
      const chatLog = gw.gateway.context.chatLog;
      await chatLog.createChat({ id: legacy });
      const events = (await getEvents(gw.url, source)).map(({ seq: _s, at: _a, ...e }) => {
        if (e.type !== 'message') return e;
        const content = e.content.map((p) => {
          if (p.kind !== 'file') return p;
          const { url: _u, sha256: _h, bytes: _b, ...stub } = p;
          return stub;
        });
        return { ...e, content };
      });
      await chatLog.append(legacy, events as NewEvent[]);
      assert.deepEqual(fileParts(await getEvents(gw.url, legacy)), [
        { kind: 'file', name: 'report.pdf', mediaType: 'application/pdf' },
      ]);

      const next = [
        userWithDocument(format, doc),
        { role: 'assistant', content: ANSWER },
        { role: 'user', content: 'Shorter.' },
      ];
      assert.equal(await send(gw, format, legacy, next), legacy, 'no branch');
      const after = await getEvents(gw.url, legacy);
      assert.deepEqual(userTexts(after), ['Summarise the report.', 'Shorter.']);
      assert.equal(fileParts(after).length, 1, 'the document is not logged again');
    });
  }
});
