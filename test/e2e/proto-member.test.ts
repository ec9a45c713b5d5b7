// A member named `__proto__` in a request body is valid JSON, and JSON.parse makes it an own
// member like any other. The gateway passes it to the provider as sent and logs it as a member of
// the message or request (SPEC section 6: everything the model saw, exactly), for each wire format,
// at the top level and in a message; it is not taken for an object's prototype (which would lose
// it and make the log refuse the request).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/start-gateway.ts';
import { eventsOfType, sessionEvents } from '../helpers/session-events.ts';
import { anthropicMessage, openaiCompletion } from '../fake-provider/fake-bodies.ts';
import { responsesMessage } from '../fake-provider/fake-responses.ts';

interface Case {
  name: string;
  path: string;
  /** A body whose top level and first message carry `__proto__`, as raw JSON text. */
  body: (id: string) => string;
  reply: () => Parameters<TestGateway['fake']['script']>[0];
  /** The body of the next turn: the same history, the answer, a new user message. */
  next: (id: string) => string;
}

const PROTO = '"__proto__":{"x":1}';

const cases: Case[] = [
  {
    name: 'Chat Completions',
    path: '/v1/chat/completions',
    body: (id) => `{"model":"gpt-4o",${PROTO},"messages":[{"role":"user","content":"hi ${id}",${PROTO}}]}`,
    reply: () => ({ json: openaiCompletion('gpt-4o', 'ok') }),
    next: (id) =>
      `{"model":"gpt-4o",${PROTO},"messages":[{"role":"user","content":"hi ${id}",${PROTO}},` +
      `{"role":"assistant","content":"ok"},{"role":"user","content":"again"}]}`,
  },
  {
    name: 'Anthropic Messages',
    path: '/v1/messages',
    body: (id) =>
      `{"model":"claude-x","max_tokens":9,${PROTO},"messages":[{"role":"user","content":"hi ${id}",${PROTO}}]}`,
    reply: () => ({ json: anthropicMessage('claude-x', 'ok') }),
    next: (id) =>
      `{"model":"claude-x","max_tokens":9,${PROTO},"messages":[{"role":"user","content":"hi ${id}",${PROTO}},` +
      `{"role":"assistant","content":[{"type":"text","text":"ok"}]},{"role":"user","content":"again"}]}`,
  },
  {
    name: 'Responses',
    path: '/v1/responses',
    body: (id) =>
      `{"model":"gpt-5",${PROTO},"store":false,"input":[{"type":"message","role":"user","content":"hi ${id}",${PROTO}}]}`,
    reply: () => ({ responses: { output: [responsesMessage('ok', 'msg_p')] } }),
    next: (id) =>
      `{"model":"gpt-5",${PROTO},"store":false,"input":[{"type":"message","role":"user","content":"hi ${id}",${PROTO}},` +
      `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},` +
      `{"type":"message","role":"user","content":"again"}]}`,
  },
];

describe('a member named __proto__ passes through and is logged', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(async () => {
    await gw?.close();
  });

  for (const c of cases) {
    test(c.name, async () => {
      const chat = `proto-${c.path.replace(/\W/g, '')}`;
      const post = (body: string) =>
        fetch(`${gw.url}${c.path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer sk-test',
            'x-api-key': 'sk-ant-test',
            'anthropic-version': '2023-06-01',
            'x-session-id': chat,
          },
          body,
        });
      gw.fake.script(c.reply());
      const first = await post(c.body(chat));
      assert.equal(first.status, 200, await first.clone().text());
      assert.equal(
        gw.fake.requests.at(-1)!.raw.toString(),
        c.body(chat),
        'the provider got the body as sent',
      );

      const events = await sessionEvents(gw.url, chat);
      const [request] = eventsOfType(events, 'request');
      assert.ok(request, 'the request is logged');
      assert.ok(Object.hasOwn(request.settings, '__proto__'), 'the top-level member is in the settings');
      assert.deepEqual(request.settings['__proto__'], { x: 1 });
      const [message] = eventsOfType(events, 'message');
      assert.ok(
        JSON.stringify(message).includes(PROTO),
        `the message's member is logged: ${JSON.stringify(message)}`,
      );

      // The next turn sends the same message back: it is the logged one, so the chat goes on.
      gw.fake.script(c.reply());
      const second = await post(c.next(chat));
      assert.equal(second.status, 200);
      assert.equal(second.headers.get('x-session-id'), chat);
      const after = eventsOfType(await sessionEvents(gw.url, chat), 'message');
      assert.equal(after.length, 4, 'the first message is logged once');

      // The member is part of the message: the same history with another value in it is an edit.
      gw.fake.script(c.reply());
      const next = c.next(chat);
      const at = next.indexOf(PROTO, next.indexOf(PROTO) + 1); // the first message's member
      const edited = await post(`${next.slice(0, at)}"__proto__":{"x":2}${next.slice(at + PROTO.length)}`);
      assert.equal(edited.status, 200);
      assert.notEqual(edited.headers.get('x-session-id'), chat, 'an edited member branches');
    });
  }
});
