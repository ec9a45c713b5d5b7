/**
 * What the log viewer shows as received: the recorded decisions and the image replay clean-up
 * applied to logged messages in the pipeline's order. Expected texts are written out here from the
 * contract (SPEC sections 4, 5 and 7), not computed with the mechanisms' code.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { receivedView, type ViewDecisions } from './received-view.ts';
import type { LogPart, OtherMessage, PageMessage } from './log-request-view.ts';
import { call, image, longText, msg, none, result, settings, sha, text } from '../test/helpers/log-page.ts';

const MARKER = '\n\n[... tool result middle pruned ...]\n\n';
const REPLAYED = '[image data removed - already processed by model]';
const MEDIA_GONE = '[media reference removed - already processed by model]';

/** user, model (tool call), tool (result) -- the result holds `content`. */
function toolTurn(content: LogPart[]): PageMessage[] {
  return [
    msg(0, 'user', [text('read the file')]),
    msg(1, 'model', [call('c1')]),
    msg(2, 'tool', [result('c1', content)]),
  ];
}

describe('received view: trims', () => {
  test('a recorded trim shows the head, the marker and the tail, with its decision', () => {
    const original = longText(10_000);
    const decisions: ViewDecisions = {
      ...none,
      trims: {
        'c1:0': {
          seq: 7,
          callId: 'c1',
          part: 0,
          digest: sha(original),
          originalChars: 10_000,
          headChars: 100,
          tailChars: 50,
          trigger: 'threshold',
        },
      },
    };
    const out = receivedView({
      page: toolTurn([text(original)]),
      others: [],
      format: 'openai',
      decisions,
      settings,
    });
    assert.equal(out.length, 1, 'only the changed message comes back');
    assert.equal(out[0]!.seq, 2);
    const inner = out[0]!.content[0]!.content as LogPart[];
    assert.equal(inner[0]!.text, original.slice(0, 100) + MARKER + original.slice(-50));
    assert.deepEqual(out[0]!.effects, [
      {
        by: 'trimmed',
        path: [0, 0],
        callId: 'c1',
        decisionSeq: 7,
        trigger: 'threshold',
        originalChars: 10_000,
        headChars: 100,
        tailChars: 50,
      },
    ]);
  });

  test('a trim recorded for other text (digest differs) changes nothing', () => {
    const decisions: ViewDecisions = {
      ...none,
      trims: {
        'c1:0': {
          seq: 7,
          callId: 'c1',
          part: 0,
          digest: sha('something else'),
          originalChars: 10,
          headChars: 1,
          tailChars: 1,
          trigger: 'overflow',
        },
      },
    };
    const out = receivedView({
      page: toolTurn([text(longText(10_000))]),
      others: [],
      format: 'openai',
      decisions,
      settings,
    });
    assert.deepEqual(out, []);
  });

  test('a trim of several text parts, after an image set aside before them, names its decision on each part', () => {
    const a = 'A'.repeat(6000);
    const b = 'B'.repeat(6000);
    const png = 'c'.repeat(64);
    const note = "[Image #1 set aside (image/png) to fit the model's image limits.]";
    const trim = {
      seq: 9,
      callId: 'c1',
      // Recorded while the image was still an image: the texts were parts 0 and 1 then.
      part: 0,
      digest: sha(a + b),
      originalChars: 12_000,
      headChars: 100,
      tailChars: 50,
      trigger: 'overflow',
      parts: [
        { chars: 6000, digest: sha(a) },
        { chars: 6000, digest: sha(b) },
      ],
    };
    const decisions: ViewDecisions = {
      ...none,
      trims: { [`c1:0:${trim.digest}`]: trim },
      setAside: { [png]: { seq: 10, key: png, ordinal: 1, note } },
    };
    const out = receivedView({
      page: toolTurn([image(png), text(a), text(b)]),
      others: [],
      format: 'anthropic',
      decisions,
      settings,
    });
    const inner = out[0]!.content[0]!.content as LogPart[];
    assert.deepEqual(
      inner.map((p) => p.text),
      [note, 'A'.repeat(100) + MARKER, 'B'.repeat(50)],
    );
    const trimmed = out[0]!.effects.filter((e) => e.by === 'trimmed');
    assert.deepEqual(
      trimmed.map((e) => [e.path, e.by === 'trimmed' && e.decisionSeq]),
      [
        [[0, 1], 9],
        [[0, 2], 9],
      ],
    );
  });
});

describe('received view: images set aside', () => {
  test('an image set aside becomes its note, by attachment hash or by URL; the others stay', () => {
    const a = 'a'.repeat(64);
    const b = 'b'.repeat(64);
    const url = 'https://example.com/cat.png';
    const page = [msg(0, 'user', [text('look'), image(a), image(b), { kind: 'image', url }])];
    const decisions: ViewDecisions = {
      ...none,
      setAside: {
        [a]: {
          seq: 4,
          key: a,
          ordinal: 1,
          note: "[Image #1 set aside (image/png) to fit the model's image limits.]",
        },
        [sha(url)]: {
          seq: 5,
          key: sha(url),
          ordinal: 3,
          note: '[Image #3 set aside. Source: https://example.com/cat.png]',
        },
      },
    };
    const out = receivedView({ page, others: [], format: 'anthropic', decisions, settings });
    assert.equal(out.length, 1);
    assert.deepEqual(out[0]!.content, [
      text('look'),
      text("[Image #1 set aside (image/png) to fit the model's image limits.]"),
      image(b),
      text('[Image #3 set aside. Source: https://example.com/cat.png]'),
    ]);
    assert.deepEqual(out[0]!.effects, [
      { by: 'set-aside', path: [1], decisionSeq: 4, ordinal: 1 },
      { by: 'set-aside', path: [3], decisionSeq: 5, ordinal: 3 },
    ]);
  });

  test('a set-aside image in an old turn keeps its note (set-aside replays before the image clean-up)', () => {
    const a = 'a'.repeat(64);
    const page: PageMessage[] = [];
    for (let t = 0; t < 5; t++) {
      page.push(msg(2 * t, 'user', t === 0 ? [text('first'), image(a)] : [text(`turn ${t}`)]));
      page.push(msg(2 * t + 1, 'model', [text('ok')]));
    }
    page.push(msg(10, 'user', [text('now')]));
    const decisions: ViewDecisions = {
      ...none,
      setAside: { [a]: { seq: 3, key: a, ordinal: 1, note: '[Image #1 set aside]' } },
    };
    const out = receivedView({ page, others: [], format: 'openai', decisions, settings });
    assert.deepEqual(out[0]!.content, [text('first'), text('[Image #1 set aside]')]);
    assert.deepEqual(
      out[0]!.effects.map((e) => e.by),
      ['set-aside'],
    );
  });
});

describe('received view: image replay clean-up', () => {
  /** Five completed user turns with an image each, then the current turn. */
  function turns(): PageMessage[] {
    const page: PageMessage[] = [];
    for (let t = 0; t < 5; t++) {
      const media =
        t === 0
          ? [text('see [media attached: /tmp/a.png] here'), image('0'.repeat(63) + t)]
          : [image('0'.repeat(63) + t)];
      page.push(msg(2 * t, 'user', media));
      page.push(msg(2 * t + 1, 'model', [text(`answer ${t}`)]));
    }
    page.push(msg(10, 'user', [text('current turn')]));
    return page;
  }

  test('images and media references before the 3 newest completed turns become placeholders', () => {
    const out = receivedView({ page: turns(), others: [], format: 'openai', decisions: none, settings });
    assert.deepEqual(
      out.map((m) => m.seq),
      [0, 2],
      'turns 0 and 1 are behind the kept window (turns 2, 3, 4 and the current one)',
    );
    assert.deepEqual(out[0]!.content, [text(`see ${MEDIA_GONE} here`), text(REPLAYED)]);
    assert.deepEqual(out[0]!.effects, [
      { by: 'image-replay', path: [0], what: 'media-reference' },
      { by: 'image-replay', path: [1], what: 'image' },
    ]);
    assert.deepEqual(out[1]!.content, [text(REPLAYED)]);
  });

  test('a page sees the same window as the whole chat (the others counted by role)', () => {
    const all = turns();
    const page = all.slice(0, 2);
    const others: OtherMessage[] = all.slice(2).map(({ seq, role }) => ({ seq, role }));
    const out = receivedView({ page, others, format: 'openai', decisions: none, settings });
    assert.deepEqual(
      out.map((m) => m.seq),
      [0],
    );
    assert.deepEqual(out[0]!.content, [text(`see ${MEDIA_GONE} here`), text(REPLAYED)]);
  });

  test('the window the latest request logged wins over the one keepTurns would give', () => {
    // Logged: the window kept from turn 1 on (the cache was warm, so it had not moved).
    const decisions: ViewDecisions = { ...none, imageReplay: { seq: 99, from: 1 } };
    const out = receivedView({ page: turns(), others: [], format: 'openai', decisions, settings });
    assert.deepEqual(
      out.map((m) => m.seq),
      [0],
      'only turn 0 is behind the logged window',
    );
    const none0 = receivedView({
      page: turns(),
      others: [],
      format: 'openai',
      decisions: { ...none, imageReplay: { seq: 99, from: 0 } },
      settings,
    });
    assert.deepEqual(none0, [], 'a window from turn 0 cleans nothing');
  });

  test('off in the settings: nothing changes', () => {
    const off = { ...settings, imageReplay: { enabled: false, keepTurns: 3 } };
    assert.deepEqual(
      receivedView({ page: turns(), others: [], format: 'openai', decisions: none, settings: off }),
      [],
    );
  });

  test('Anthropic: tool results logged before a user text belong to the turn that text starts', () => {
    // On the wire, [tool_result, text] is one user message that starts a turn; the log splits it.
    const img = '9'.repeat(64);
    const page: PageMessage[] = [
      msg(0, 'user', [text('start')]),
      msg(1, 'model', [call('c1')]),
      msg(2, 'tool', [result('c1', [image(img)])]),
      msg(3, 'user', [text('and also this')]),
      msg(4, 'model', [text('a')]),
      msg(5, 'user', [text('u5')]),
      msg(6, 'model', [text('b')]),
      msg(7, 'user', [text('u7')]),
      msg(8, 'model', [text('c')]),
      msg(9, 'user', [text('current')]),
    ];
    const anthropic = receivedView({ page, others: [], format: 'anthropic', decisions: none, settings });
    assert.deepEqual(anthropic, [], 'the window starts at the turn of seq 3, which holds the tool result');
    const openai = receivedView({ page, others: [], format: 'openai', decisions: none, settings });
    assert.deepEqual(
      openai.map((m) => m.seq),
      [2],
      'as separate messages the tool result is in the turn before',
    );
  });
});

describe('received view: pruning projection', () => {
  test('a soft entry shows head, separator, tail and the note, with the pass', () => {
    const original = longText(10_000);
    const decisions: ViewDecisions = {
      ...none,
      pruning: { seq: 20, projection: [{ callId: 'c1', action: 'soft', digest: sha(original) }] },
    };
    const out = receivedView({
      page: toolTurn([text(original)]),
      others: [],
      format: 'anthropic',
      decisions,
      settings,
    });
    const inner = out[0]!.content[0]!.content as LogPart[];
    assert.equal(
      inner[0]!.text,
      original.slice(0, 1500) +
        '\n...\n' +
        original.slice(-1500) +
        '\n\n[Tool result trimmed: kept first 1500 chars and last 1500 chars of 10000 chars.]',
    );
    assert.deepEqual(out[0]!.effects, [
      { by: 'pruned', path: [0, 0], callId: 'c1', action: 'soft', decisionSeq: 20 },
    ]);
  });

  test('a cleared entry shows the placeholder', () => {
    const original = longText(6_000);
    const decisions: ViewDecisions = {
      ...none,
      pruning: { seq: 21, projection: [{ callId: 'c1', action: 'cleared', digest: sha(original) }] },
    };
    const out = receivedView({
      page: toolTurn([text(original)]),
      others: [],
      format: 'anthropic',
      decisions,
      settings,
    });
    const inner = out[0]!.content[0]!.content as LogPart[];
    assert.equal(inner[0]!.text, '[Old tool result content cleared]');
    assert.equal(out[0]!.effects[0]!.by, 'pruned');
  });

  test('the logged messages are never changed (the view works on a copy)', () => {
    const original = longText(6_000);
    const page = toolTurn([text(original)]);
    const before = structuredClone(page);
    receivedView({
      page,
      others: [],
      format: 'anthropic',
      decisions: {
        ...none,
        pruning: { seq: 1, projection: [{ callId: 'c1', action: 'cleared', digest: sha(original) }] },
      },
      settings,
    });
    assert.deepEqual(page, before);
  });
});
