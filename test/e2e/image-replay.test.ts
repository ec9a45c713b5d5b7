/**
 * The image replay clean-up end to end (SPEC section 4, last bullet; seed 001): official SDKs ->
 * gateway -> fake provider, both wire formats. Images and media references of turns the model has
 * already processed are not sent again; the 3 newest completed turns and the current one go
 * byte for byte; the chat log keeps every image.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { makePng } from '../../chat-log/test-images.ts';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import {
  chatDriver,
  getEvents,
  ofType,
  wireMessages,
  type CallOutcome,
  type ChatDriver,
  type Format,
} from '../helpers/sdk-chat-drivers.ts';

const MODEL = 'vision-test'; // no known context window: pruning never measures it
const IMG = '[image data removed - already processed by model]';
const REF = '[media reference removed - already processed by model]';
const formats: Format[] = ['openai', 'anthropic'];

/** Six distinct images, one per place they appear in the chat. */
const images = {
  a: makePng(3, 2, 1), // turn 1, user
  b: makePng(5, 4, 2), // turn 2, tool result
  c: makePng(7, 6, 3), // turn 3, user
  d: makePng(9, 8, 4), // turn 5, user
  e: makePng(11, 10, 5), // turn 5, tool result
  f: makePng(13, 12, 6), // turn 6 (current), user
};

/** Texts with media references, and what the clean-up must make of them once their turn is old. */
const texts = {
  t1: {
    sent: '[media attached: /tmp/a.png] What is in this picture?',
    cleaned: `${REF} What is in this picture?`,
  },
  t2: { sent: 'Take a screenshot of the dashboard.', cleaned: 'Take a screenshot of the dashboard.' },
  t2result: { sent: 'Screenshot saved to media://inbound/abc', cleaned: `Screenshot saved to ${REF}` },
  t3: { sent: '[Image: source: /tmp/c.jpg] And this one?', cleaned: `${REF} And this one?` },
  t4: { sent: 'Which of them is brighter?', cleaned: 'Which of them is brighter?' },
  t5: {
    sent: 'Compare media://inbound/def with the dashboard.',
    cleaned: `Compare ${REF} with the dashboard.`,
  },
  t5result: { sent: 'Dashboard now:', cleaned: 'Dashboard now:' },
  t6: { sent: '[media attached: /tmp/f.png] The last one.', cleaned: `${REF} The last one.` },
  t7: { sent: 'Thanks, that is all.', cleaned: 'Thanks, that is all.' },
};
const cleanedOf = new Map(Object.values(texts).map((t) => [t.sent, t.cleaned]));

interface ImageChat {
  driver: ChatDriver;
  /** Index in the wire messages of each turn's opening user message (turn 1 first). */
  turnStarts: number[];
  calls: CallOutcome[];
}

/** Opens a turn: remembers where it starts in the client's wire messages. */
function openTurn(chat: ImageChat, content: Parameters<ChatDriver['user']>[0]): void {
  // OpenAI histories open with the system message; Anthropic ones carry it outside `messages`.
  chat.turnStarts.push(chat.driver.messages.length - (chat.driver.format === 'openai' ? 1 : 0));
  chat.driver.user(content);
}

/** Five completed turns with images in user messages and tool results, driven call by call. */
async function fiveTurns(gw: TestGateway, format: Format, sessionId: string): Promise<ImageChat> {
  const driver = chatDriver(format, gw.url, gw.fake, MODEL, {
    system: 'You look at pictures.',
    tools: ['screenshot'],
    headers: { 'x-session-id': sessionId },
  });
  const chat: ImageChat = { driver, turnStarts: [], calls: [] };
  const call = async () => {
    const out = await driver.call();
    chat.calls.push(out);
    return out;
  };

  openTurn(chat, [{ text: texts.t1.sent }, { image: images.a }]);
  await call();

  openTurn(chat, texts.t2.sent);
  gw.fake.script(driver.toolCallReply('call_shot_1', 'screenshot', { path: '/dashboard' }));
  await call();
  driver.toolResult('call_shot_1', [{ text: texts.t2result.sent }, { image: images.b }]);
  await call();

  openTurn(chat, [{ image: images.c }, { text: texts.t3.sent }]);
  await call();

  openTurn(chat, texts.t4.sent);
  await call();

  openTurn(chat, [{ text: texts.t5.sent }, { image: images.d }]);
  gw.fake.script(driver.toolCallReply('call_shot_2', 'screenshot', { path: '/dashboard' }));
  await call();
  driver.toolResult('call_shot_2', [{ text: texts.t5result.sent }, { image: images.e }]);
  await call();
  return chat;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The body the provider should get: the client's body with, in user and tool messages before
 * `cutoff`, every image part replaced by the removal text and every known reference text cleaned.
 */
function expectedBody(format: Format, clientBody: string, cutoff: number): string {
  const body = JSON.parse(clientBody) as Obj;
  const offset = format === 'openai' ? 1 : 0; // the system message
  const cleanText = (text: string): string => cleanedOf.get(text) ?? text;
  const cleanParts = (parts: unknown[]): unknown[] =>
    parts.map((p) => {
      if (!isObj(p)) return p;
      if (p.type === 'image' || p.type === 'image_url') return { type: 'text', text: IMG };
      if (p.type === 'text' && typeof p.text === 'string') return { ...p, text: cleanText(p.text) };
      if (p.type === 'tool_result') {
        return {
          ...p,
          content: Array.isArray(p.content)
            ? cleanParts(p.content)
            : typeof p.content === 'string'
              ? cleanText(p.content)
              : p.content,
        };
      }
      return p;
    });
  wireMessages(body).forEach((m, i) => {
    if (i - offset >= cutoff || (m.role !== 'user' && m.role !== 'tool')) return;
    if (typeof m.content === 'string') m.content = cleanText(m.content);
    else if (Array.isArray(m.content)) m.content = cleanParts(m.content);
  });
  return JSON.stringify(body);
}

/** The client's wire messages from `from` on (system message aside), as JSON. */
function messagesFrom(format: Format, body: Obj, from: number): string {
  return JSON.stringify(wireMessages(body).slice(from + (format === 'openai' ? 1 : 0)));
}

function countImages(body: Obj): number {
  return (JSON.stringify(body).match(/"type":"image(_url)?"/g) ?? []).length;
}

describe('image replay clean-up through the gateway', () => {
  let gw: TestGateway;
  before(async () => {
    // chunkImages 0: the window moves whenever an image is behind it, even on the warm cache these
    // back-to-back calls keep (the warm/cold/chunk rule has its own test, image-replay-window).
    gw = await startGateway({ config: { pruning: { imageReplay: { chunkImages: 0 } } } });
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: older turns lose their images and references; the 3 newest completed turns and the current one go byte for byte`, async () => {
      const id = `images-${format}`;
      const chat = await fiveTurns(gw, format, id);
      const { driver, turnStarts, calls } = chat;

      // While there are at most 3 completed turns before the current one, nothing changes.
      for (const out of calls.slice(0, 5)) assert.equal(out.provider.raw.toString('utf8'), out.clientBody);
      // Turn 5 opens with 4 completed turns before it: turn 1 alone is cleaned.
      const t5 = calls[5]!;
      assert.equal(t5.provider.raw.toString('utf8'), expectedBody(format, t5.clientBody, turnStarts[1]!));
      // Mid tool loop in turn 5: turn 1 stays cleaned, turns 3-5 go byte for byte. (Whether turn 2
      // is kept too depends on whether a turn in progress counts as completed; not pinned here.)
      const loop = calls[6]!;
      const loopExpected = JSON.parse(expectedBody(format, loop.clientBody, turnStarts[1]!)) as Obj;
      const loopClient = JSON.parse(loop.clientBody) as Obj;
      const offset = format === 'openai' ? 1 : 0;
      assert.deepEqual(
        wireMessages(loop.providerBody).slice(0, turnStarts[1]! + offset),
        wireMessages(loopExpected).slice(0, turnStarts[1]! + offset),
      );
      assert.equal(
        messagesFrom(format, loop.providerBody, turnStarts[2]!),
        messagesFrom(format, loopClient, turnStarts[2]!),
      );

      // Turn 6, the current one, after 5 completed turns.
      openTurn(chat, [{ image: images.f }, { text: texts.t6.sent }]);
      const out = await driver.call();
      assert.equal(out.answerText, 'Hello from the fake provider.');
      const client = JSON.parse(out.clientBody) as Obj;
      const cutoff = turnStarts[2]!; // turn 3: the 3rd newest completed turn
      assert.equal(out.provider.raw.toString('utf8'), expectedBody(format, out.clientBody, cutoff));
      assert.equal(
        messagesFrom(format, out.providerBody, cutoff),
        messagesFrom(format, client, cutoff),
        'turns 3-6 byte for byte',
      );
      assert.equal(countImages(client), 6);
      assert.equal(countImages(out.providerBody), 4, 'images a and b are not sent again');
      const sent = out.provider.raw.toString('utf8');
      assert.equal(sent.split(IMG).length - 1, 2);
      assert.equal(sent.split(REF).length - 1, 2);
      assert.ok(sent.includes(JSON.stringify(texts.t6.sent)), 'the current turn keeps its reference');
      assert.ok(sent.includes(images.f.toString('base64')), 'the current turn keeps its image');
      // Everything but the messages passes unchanged.
      assert.deepEqual({ ...out.providerBody, messages: null }, { ...client, messages: null });

      // One turn later the window moves: turn 3 is cleaned too, turns 4-7 go as sent.
      openTurn(chat, texts.t7.sent);
      const next = await driver.call();
      assert.equal(next.provider.raw.toString('utf8'), expectedBody(format, next.clientBody, turnStarts[3]!));
      assert.equal(countImages(next.providerBody), 3);

      // The chat log still holds every image, once each, as an attachment on disk.
      const events = await getEvents(gw.url, id);
      const logged = ofType(events, 'message').flatMap((m) =>
        m.content.flatMap((c) =>
          c.kind === 'image'
            ? [c]
            : c.kind === 'tool-result'
              ? c.content.filter((x) => x.kind === 'image')
              : [],
        ),
      );
      const shas = logged.map((c) => c.attachment?.sha256);
      assert.equal(shas.length, 6);
      assert.equal(new Set(shas).size, 6);
      for (const c of logged) {
        assert.ok(c.attachment);
        const file = join(gw.dataDir, 'attachments', `${c.attachment.sha256}.png`);
        assert.ok(existsSync(file), `attachment ${c.attachment.sha256} on disk`);
        assert.equal(statSync(file).size, c.attachment.bytes);
      }
      const logText = JSON.stringify(events);
      assert.ok(!logText.includes(IMG) && !logText.includes(REF), 'the log holds what the client sent');
      assert.ok(logText.includes(JSON.stringify(texts.t1.sent)));
    });
  }
});

describe('image replay clean-up turned off', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { pruning: { imageReplay: { enabled: false } } } });
  });
  after(() => gw.close());

  for (const format of formats) {
    test(`${format}: pruning.imageReplay.enabled: false forwards every request byte for byte`, async () => {
      const chat = await fiveTurns(gw, format, `images-off-${format}`);
      openTurn(chat, [{ image: images.f }, { text: texts.t6.sent }]);
      await chat.driver.call();
      openTurn(chat, texts.t7.sent);
      const last = await chat.driver.call();
      for (const out of [...chat.calls, last])
        assert.equal(out.provider.raw.toString('utf8'), out.clientBody);
      assert.equal(countImages(last.providerBody), 6);
    });
  }
});
