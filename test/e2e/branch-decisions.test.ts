/**
 * A branched chat keeps the parent's decisions about the history it shares (SPEC sections 2, 4, 5,
 * 6 and 7), end to end through the official SDKs, both wire formats. A request's decisions are
 * logged after its messages, so when a client edits the last message of a request the gateway
 * repaired, those decisions stand after the point where the branch forks; they still concern the
 * shared messages. The branch's first request must carry the notes, the trimmed texts and the
 * pruned results the parent sent (never an image or a text the model was spared), byte for byte,
 * so the provider's cached prefix stays warm, and must prune only once the parent's cache has gone
 * cold. A decision about a message the branch does not share stays with the parent. A restarted
 * gateway replays the branch from its own log (file store, and Redis in the Redis pass).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePng } from '../../chat-log/test-images.ts';
import type { Event } from '../../chat-log/format/current.ts';
import { FakeProvider, type RecordedRequest } from '../fake-provider/fake-provider.ts';
import { dropPrefix } from '../helpers/redis-test.ts';
import {
  sharedRedisPrefix,
  startGateway,
  testStoreIsRedis,
  type TestGateway,
} from '../helpers/start-gateway.ts';
import {
  bigText,
  chatDriver,
  contentText,
  getEvents,
  getSession,
  ofType,
  wireMessages,
  wireToolResults,
  type CallOutcome,
  type ChatDriver,
  type Format,
} from '../helpers/sdk-chat-drivers.ts';

const formats: Format[] = ['openai', 'anthropic'];
const MINUTE = 60_000;
const SET_ASIDE = /set aside/;

const attempts = (out: CallOutcome) => Number(out.headers.get('x-oda-attempts'));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const imagesIn = (value: unknown): number =>
  (JSON.stringify(value).match(/"type":"image(_url)?"/g) ?? []).length;
const notesIn = (value: unknown): number => JSON.stringify(value).split('set aside').length - 1;

/** The model-call requests the fake provider got from `from` on. */
function upstreamSince(fake: FakeProvider, from: number): RecordedRequest[] {
  return fake.requests
    .slice(from)
    .filter((r) => r.path.startsWith('/v1/chat/completions') || r.path.startsWith('/v1/messages'));
}

/** The events a branch inherited: its seed, as its header counts it. */
async function inheritedEvents(url: string, id: string): Promise<Event[]> {
  const { header } = await getSession(url, id);
  assert.ok(header.inheritedEvents, `${id} is a seeded branch`);
  return (await getEvents(url, id)).slice(0, header.inheritedEvents);
}

describe('a branch replays the images set aside and the trims of the history it shares', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oda-branch-decisions-'));
  let fake: FakeProvider;
  let gw: TestGateway;
  before(async () => {
    fake = await new FakeProvider().start();
    gw = await startGateway({ fakeProvider: fake, dataDir });
  });
  after(async () => {
    await gw.close();
    await fake.close();
    if (testStoreIsRedis) await dropPrefix(sharedRedisPrefix(dataDir));
    rmSync(dataDir, { recursive: true, force: true });
  });
  /**
   * The same gateway again on the same log (nothing of the chats is left in memory), and the
   * client's conversation `driver` held against it.
   */
  async function restart(driver: ChatDriver, tools?: string[]): Promise<ChatDriver> {
    await gw.close();
    gw = await startGateway({ fakeProvider: fake, dataDir });
    const moved = chatDriver(driver.format, gw.url, fake, driver.model, tools ? { tools } : {});
    moved.messages.push(...structuredClone(driver.messages));
    return moved;
  }

  for (const format of formats) {
    test(`${format}: an edited last message keeps the shared images set aside, and only those`, async () => {
      const [a, b, c] = [makePng(5, 5, 1), makePng(6, 5, 2), makePng(7, 5, 3)];
      const id = `branch-images-${format}`;
      const driver = chatDriver(format, gw.url, fake, 'vision-model', { headers: { 'x-session-id': id } });
      driver.user([{ text: 'Compare these two.' }, { image: a }, { image: b }]);
      driver.assistantText('They differ in width.');
      const edited = driver.fork();
      driver.user([{ text: 'And this one?' }, { image: c }]);

      // The provider takes no image: all three are set aside, in one round ("3 > 0").
      fake.options = { imageLimit: 0 };
      let from = fake.requests.length;
      const parent = await driver.call();
      assert.equal(parent.headers.get('x-session-id'), id);
      assert.equal(attempts(parent), 2);
      const parentSent = upstreamSince(fake, from).at(-1)!.json!;
      assert.equal(imagesIn(parentSent), 0);
      const parentKeys = ofType(await getEvents(gw.url, id), 'image-set-aside').map((e) => e.key);
      assert.deepEqual(parentKeys.sort(), [sha256(a), sha256(b), sha256(c)].sort());

      // The client edits the text of its last message and sends the third picture again. The
      // provider now takes one image.
      fake.options = { imageLimit: 1 };
      edited.user([{ text: 'And this one, at full size?' }, { image: c }]);
      from = fake.requests.length;
      const branched = await edited.call();
      const branchId = branched.headers.get('x-session-id')!;
      assert.match(branchId, new RegExp(`^${id}\\.b[0-9a-f]{12}$`));
      // One attempt: the shared images went as the parent's notes from the start.
      assert.equal(attempts(branched), 1);
      const sent = upstreamSince(fake, from);
      assert.equal(sent.length, 1);
      const first = wireMessages(sent[0]!.json!);
      const parentFirst = wireMessages(parentSent);
      // The shared history goes byte for byte as the parent's last call sent it.
      assert.deepEqual(first.slice(0, 2), parentFirst.slice(0, 2));
      assert.equal(notesIn(first[0]), 2);
      // The parent's decision about its own last message is not the branch's: its picture goes.
      assert.equal(imagesIn(first[2]), 1);
      assert.equal(notesIn(first[2]), 0);

      // The branch's own log holds the decisions it replays: the two shared images', not the third.
      const inherited = ofType(await inheritedEvents(gw.url, branchId), 'image-set-aside');
      assert.deepEqual(inherited.map((e) => e.key).sort(), [sha256(a), sha256(b)].sort());
      assert.ok(inherited.every((e) => SET_ASIDE.test(e.note)));

      // Restarted, the gateway replays them from the branch's log.
      const again = await restart(edited);
      again.user('Thanks.');
      from = fake.requests.length;
      const next = await again.call({ headers: { 'x-session-id': id } });
      assert.equal(next.headers.get('x-session-id'), branchId);
      assert.equal(attempts(next), 1);
      const nextFirst = wireMessages(upstreamSince(fake, from)[0]!.json!);
      assert.deepEqual(nextFirst.slice(0, 2), parentFirst.slice(0, 2));
      assert.equal(imagesIn(nextFirst[2]), 1);
      fake.options = {};
    });

    test(`${format}: an edited last message keeps the shared tool results trimmed, and only those`, async () => {
      const id = `branch-trims-${format}`;
      const driver = chatDriver(format, gw.url, fake, 'long-model', {
        tools: ['read_file'],
        headers: { 'x-session-id': id },
      });
      const log = bigText('app log', 30_000);
      driver.user('Read the log.');
      driver.assistantToolCall('call_log', 'read_file', { path: '/var/log/app.log' });
      driver.toolResult('call_log', log);
      driver.assistantText('It is long.');
      const edited = driver.fork();
      driver.user('Summarize it.');

      // The provider refuses the 30,000 characters for context overflow: the result is trimmed.
      fake.options = { contextLimitChars: 20_000 };
      let from = fake.requests.length;
      const parent = await driver.call();
      assert.equal(parent.headers.get('x-session-id'), id);
      assert.equal(attempts(parent), 2);
      const trimmed = contentText(wireToolResults(upstreamSince(fake, from).at(-1)!.json!).get('call_log'));
      assert.ok(trimmed.length < 6000, 'the parent sent the trimmed form');
      // The parent goes on past the fork point: another long result, trimmed in turn.
      driver.user('Now the other log.');
      driver.assistantToolCall('call_other', 'read_file', { path: '/var/log/other.log' });
      driver.toolResult('call_other', bigText('other log', 30_000));
      assert.equal(attempts(await driver.call()), 2);
      const parentTrims = ofType(await getEvents(gw.url, id), 'tool-result-trimmed').map((e) => e.callId);
      assert.deepEqual(parentTrims, ['call_log', 'call_other']);

      // The client edits "Summarize it.": the branch's first request carries the trimmed form.
      edited.user('Summarize it in one line.');
      from = fake.requests.length;
      const branched = await edited.call();
      const branchId = branched.headers.get('x-session-id')!;
      assert.match(branchId, new RegExp(`^${id}\\.b[0-9a-f]{12}$`));
      assert.equal(attempts(branched), 1);
      const sent = upstreamSince(fake, from);
      assert.equal(sent.length, 1, 'no overflow refusal: the full text never went again');
      assert.equal(contentText(wireToolResults(sent[0]!.json!).get('call_log')), trimmed);

      // The branch's log holds the trim of the result it shares, not the one of the result it
      // does not share.
      const inherited = ofType(await inheritedEvents(gw.url, branchId), 'tool-result-trimmed');
      assert.deepEqual(
        inherited.map((e) => [e.callId, e.trigger]),
        [['call_log', 'overflow']],
      );

      const again = await restart(edited, ['read_file']);
      again.user('Thanks.');
      from = fake.requests.length;
      const next = await again.call({ headers: { 'x-session-id': id } });
      assert.equal(next.headers.get('x-session-id'), branchId);
      assert.equal(attempts(next), 1);
      assert.equal(
        contentText(wireToolResults(upstreamSince(fake, from)[0]!.json!).get('call_log')),
        trimmed,
      );
      fake.options = {};
    });
  }
});

describe("a branch keeps the parent's warm prefix under cache-TTL pruning", () => {
  const MODEL = 'small-model';
  const RESULTS = 8;
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({
      config: {
        models: { 'small-*': { contextWindow: 30_000 } },
        pruning: { mode: 'cache-ttl', ttl: '5m' },
      },
    });
  });
  after(() => gw.close());

  /** Every tool result's text as the provider got it, by call id: its length and digest. */
  const results = (out: CallOutcome) =>
    Object.fromEntries(
      [...wireToolResults(out.providerBody)].map(([k, v]) => {
        const text = contentText(v);
        return [k, `${text.length} chars, sha256 ${sha256(Buffer.from(text)).slice(0, 12)}`];
      }),
    );

  for (const format of formats) {
    test(`${format}: the branch replays the parent's projection and prunes only once its cache is cold`, async () => {
      const id = `branch-pruning-${format}`;
      const driver = chatDriver(format, gw.url, gw.fake, MODEL, {
        tools: ['read_file'],
        headers: { 'x-session-id': id },
      });
      driver.user('Review the repository.');
      for (let i = 0; i < RESULTS; i++) {
        driver.assistantToolCall(`call_${i}`, 'read_file', { path: `/src/f${i}.ts` });
        driver.toolResult(`call_${i}`, bigText(`file ${i}`, 10_000));
      }
      driver.user('What did you find?');
      // No cache yet: a pass soft-trims the results before the last three assistant turns.
      const first = await driver.call();
      assert.ok(first.headers.get('x-oda-pruned'));

      // Four minutes on, the cache is warm: the projection is replayed, nothing more is pruned,
      // though one more result is old enough now.
      gw.clock.advance(4 * MINUTE);
      const regenerateFrom = driver.fork();
      driver.user('And the tests?');
      const warm = await driver.call();
      assert.equal(warm.headers.get('x-oda-pruned'), null);

      // Two minutes later the client edits that message. The branch's seed holds only the first
      // call's answer (six minutes old), but the provider cached the shared prefix on the second
      // call: the branch is warm too, and sends that prefix as the parent did.
      gw.clock.advance(2 * MINUTE);
      const edited = regenerateFrom.fork();
      edited.user('And the docs?');
      const branched = await edited.call();
      assert.notEqual(branched.headers.get('x-session-id'), id);
      assert.equal(branched.headers.get('x-oda-pruned'), null, 'no pass on the warm prefix');
      assert.deepEqual(results(branched), results(warm));

      // The parent's cache goes cold: its next call prunes again (a pass after the fork point).
      gw.clock.advance(4 * MINUTE);
      const editFrom = driver.fork();
      driver.user('And the build?');
      const pruned = await driver.call();
      assert.ok(pruned.headers.get('x-oda-pruned'));
      assert.notDeepEqual(results(pruned), results(warm));

      // An edit a minute later branches after that pass: the branch replays its projection.
      gw.clock.advance(MINUTE);
      const second = editFrom.fork();
      second.user('And the release?');
      const again = await second.call();
      const againId = again.headers.get('x-session-id')!;
      assert.notEqual(againId, id);
      assert.equal(again.headers.get('x-oda-pruned'), null);
      assert.deepEqual(results(again), results(pruned));
      const passes = ofType(await inheritedEvents(gw.url, againId), 'pruning');
      const parentPasses = ofType(await getEvents(gw.url, id), 'pruning');
      assert.equal(parentPasses.length, 2);
      assert.deepEqual(passes.at(-1)!.projection, parentPasses.at(-1)!.projection);
    });
  }
});

describe('a branch inherits the set-aside of images given by a provider file id (Responses)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  test('the edited turn goes at once with the notes, never the images again', async () => {
    // The gateway never fetches a file id's bytes; the log keeps such an image as a raw part.
    const image = (n: number) => ({ type: 'input_image', file_id: `file-img${n}`, detail: 'auto' });
    const shared = [
      {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'Compare.' }, image(1), image(2)],
      },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'They differ.' }] },
    ];
    const call = async (text: string) => {
      const from = gw.fake.requests.length;
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-session-id': 'file-id-images' },
        body: JSON.stringify({
          model: 'gpt-test',
          store: false,
          input: [...shared, { type: 'message', role: 'user', content: [{ type: 'input_text', text }] }],
        }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      const sent = gw.fake.requests.slice(from).filter((r) => r.path.startsWith('/v1/responses'));
      return {
        res,
        sent,
        images: (r: RecordedRequest) => JSON.stringify(r.json).split('"input_image"').length - 1,
      };
    };
    gw.fake.options = { imageLimit: 0 };
    const parent = await call('And now?');
    assert.equal(parent.res.headers.get('x-oda-images-set-aside'), '2');
    const branch = await call('And now, edited?');
    assert.notEqual(branch.res.headers.get('x-session-id'), 'file-id-images', 'the edit made a branch');
    assert.equal(branch.res.headers.get('x-oda-attempts'), '1', 'no refusal to repair again');
    assert.equal(branch.sent.length, 1);
    assert.equal(branch.images(branch.sent[0]!), 0);
    const firstItem = (r: RecordedRequest) => JSON.stringify((r.json as { input: unknown[] }).input[0]);
    assert.equal(
      firstItem(branch.sent[0]!),
      firstItem(parent.sent.at(-1)!),
      'the shared first message goes as the parent last sent it',
    );
  });
});
