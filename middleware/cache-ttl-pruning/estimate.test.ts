import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createAnthropicRequestView } from '../../providers/anthropic/request-view.ts';
import { createOpenaiRequestView } from '../../providers/openai/request-view.ts';
import { estimateChars, estimateTokens, isWideCodePoint, weightedChars } from './estimate.ts';
import { PNG_BASE64 } from './__fixtures__/build-wire-chat.ts';

describe('weightedChars', () => {
  const cases: Array<[string, string, number]> = [
    ['ASCII, one per character', 'hello world', 11],
    ['Han ideographs weigh 4', '漢字', 8],
    ['Hiragana weighs 4', 'ひらがな', 16],
    ['Katakana and the prolonged sound mark weigh 4', 'カー', 8],
    ['Hangul syllables weigh 4', '한국어', 12],
    ['CJK punctuation weighs 4', '、。', 8],
    ['a supplementary-plane ideograph is one code point of weight 4', '𠀀', 4],
    ['an emoji (surrogate pair) is one code point of weight 1', '😀', 1],
    ['Latin with accents is not wide', 'élève', 5],
    ['Cyrillic is not wide', 'мир', 3],
    ['a lone surrogate counts once', '\ud800x', 2],
    ['mixed', 'ab漢😀한', 2 + 4 + 1 + 4],
    ['empty', '', 0],
  ];
  for (const [name, text, expected] of cases) {
    test(name, () => assert.equal(weightedChars(text), expected));
  }

  test('equals code points plus 3 per wide code point', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const cps = [...text];
        const wide = cps.filter((ch) => isWideCodePoint(ch.codePointAt(0) ?? 0)).length;
        assert.equal(weightedChars(text), cps.length + 3 * wide);
      }),
    );
  });
});

describe('estimateChars / estimateTokens', () => {
  test('OpenAI: counts messages, tool-call arguments, tool-result text and images, not the system prompt', () => {
    const body = {
      model: 'gpt-4.1',
      tools: [
        { type: 'function', function: { name: 'read', description: 'x'.repeat(5000), parameters: {} } },
      ],
      messages: [
        { role: 'system', content: 'S'.repeat(10_000) },
        { role: 'user', content: 'abcd' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"p":1}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'c1',
          content: [
            { type: 'text', text: 'result' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}` } },
          ],
        },
        { role: 'user', content: '漢字かなカナ한국' },
      ],
    };
    const view = createOpenaiRequestView(body);
    const expected = 4 + 7 + 6 + 8000 + 8 * 4;
    assert.equal(estimateChars(view), expected);
    assert.equal(estimateTokens(view), Math.ceil(expected / 4));
  });

  test('Anthropic: counts messages, tool_use input, tool_result text and images, not system or tools', () => {
    const body = {
      model: 'claude-sonnet-4-5',
      system: 'S'.repeat(10_000),
      tools: [{ name: 'read', description: 'x'.repeat(5000), input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'abcd' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'tool_use', id: 'c1', name: 'read', input: { p: 1 } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'c1',
              content: [
                { type: 'text', text: 'result' },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
                { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
              ],
            },
          ],
        },
        { role: 'user', content: '漢字かなカナ한국' },
      ],
    };
    const view = createAnthropicRequestView(body);
    const expected = 4 + 3 + 7 + 6 + 2 * 8000 + 8 * 4;
    assert.equal(estimateChars(view), expected);
    assert.equal(estimateTokens(view), Math.ceil(expected / 4));
  });

  test('tokens round up', () => {
    const view = createOpenaiRequestView({ model: 'm', messages: [{ role: 'user', content: 'abcde' }] });
    assert.equal(estimateTokens(view), 2);
  });

  test('malformed bodies estimate without throwing', () => {
    const bodies: Array<Record<string, unknown>> = [
      { model: 'm' },
      { model: 'm', messages: 'nope' },
      {
        model: 'm',
        messages: [null, 3, { role: 'user', content: { x: 1 } }, { role: 'tool', content: [null, 7] }],
      },
    ];
    for (const body of bodies) {
      assert.equal(estimateChars(createOpenaiRequestView(structuredClone(body))), 0);
      assert.equal(estimateChars(createAnthropicRequestView(structuredClone(body))), 0);
    }
  });
});
