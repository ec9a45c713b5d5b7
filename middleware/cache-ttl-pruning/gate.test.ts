import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig, type ConfigInput } from '../../config/config.ts';
import { DEFAULT_TTL_MS, EXTENDED_TTL_MS, pruningGate, resolvePruningSettings } from './gate.ts';

const MIN = 60_000;

function pruningConfig(pruning: ConfigInput['pruning'] = {}) {
  return parseConfig({ pruning }).pruning;
}

describe('pruningGate', () => {
  const base = { mode: 'cache-ttl' as const, ttlMs: 5 * MIN, now: 1_000_000_000 };

  test('a chat without a cache clock has no warm cache: open', () => {
    assert.deepEqual(pruningGate({ ...base, lastCacheTouchAt: undefined }), {
      open: true,
      reason: 'no-clock',
    });
  });

  test('a non-finite clock counts as no clock', () => {
    assert.equal(pruningGate({ ...base, lastCacheTouchAt: Number.NaN }).open, true);
  });

  test('exactly ttl after the last touch the cache still counts as warm: closed', () => {
    const result = pruningGate({ ...base, lastCacheTouchAt: base.now - base.ttlMs });
    assert.deepEqual(result, { open: false, reason: 'warm' });
  });

  test('one millisecond past ttl: open', () => {
    const result = pruningGate({ ...base, lastCacheTouchAt: base.now - base.ttlMs - 1 });
    assert.deepEqual(result, { open: true, reason: 'expired' });
  });

  test('well inside ttl: closed', () => {
    assert.equal(pruningGate({ ...base, lastCacheTouchAt: base.now - MIN }).open, false);
  });

  test('a clock in the future (another replica ahead) counts as warm', () => {
    assert.equal(pruningGate({ ...base, lastCacheTouchAt: base.now + MIN }).open, false);
  });

  test('mode off never opens, even without a clock', () => {
    assert.deepEqual(pruningGate({ ...base, mode: 'off', lastCacheTouchAt: undefined }), {
      open: false,
      reason: 'off',
    });
  });

  test('ttl 0 never opens', () => {
    assert.deepEqual(pruningGate({ ...base, ttlMs: 0, lastCacheTouchAt: undefined }), {
      open: false,
      reason: 'ttl-disabled',
    });
  });
});

describe('resolvePruningSettings', () => {
  test('anthropic-format default with no cache markers: cache-ttl, 5m', () => {
    const s = resolvePruningSettings(pruningConfig(), true, undefined);
    assert.equal(s.mode, 'cache-ttl');
    assert.equal(s.ttlMs, DEFAULT_TTL_MS);
  });

  test('anthropic-format default takes 1h when the request asks for it', () => {
    const s = resolvePruningSettings(pruningConfig(), true, '1h');
    assert.equal(s.mode, 'cache-ttl');
    assert.equal(s.ttlMs, EXTENDED_TTL_MS);
  });

  test('a 5m hint gives 5m', () => {
    assert.equal(resolvePruningSettings(pruningConfig(), true, '5m').ttlMs, 5 * MIN);
  });

  test('other formats are off unless configured', () => {
    assert.equal(resolvePruningSettings(pruningConfig(), false, '1h').mode, 'off');
  });

  test('explicit mode cache-ttl enables other formats, with the 5m default', () => {
    const s = resolvePruningSettings(pruningConfig({ mode: 'cache-ttl' }), false, undefined);
    assert.equal(s.mode, 'cache-ttl');
    assert.equal(s.ttlMs, 5 * MIN);
  });

  test('explicit mode off wins over the format default', () => {
    assert.equal(resolvePruningSettings(pruningConfig({ mode: 'off' }), true, '1h').mode, 'off');
  });

  test('an explicit ttl wins over the hint, both ways', () => {
    assert.equal(resolvePruningSettings(pruningConfig({ ttl: '10m' }), true, '1h').ttlMs, 10 * MIN);
    assert.equal(resolvePruningSettings(pruningConfig({ ttl: '2h' }), true, '5m').ttlMs, 120 * MIN);
    assert.equal(resolvePruningSettings(pruningConfig({ ttl: 3 }), true, undefined).ttlMs, 3 * MIN);
  });

  test('ttl 0 disables pruning', () => {
    const s = resolvePruningSettings(pruningConfig({ mode: 'cache-ttl', ttl: 0 }), true, '1h');
    assert.equal(s.mode, 'off');
    assert.equal(s.ttlMs, 0);
  });

  test('the override header value off disables pruning for the request', () => {
    assert.equal(
      resolvePruningSettings(pruningConfig({ mode: 'cache-ttl' }), true, undefined, 'off').mode,
      'off',
    );
    assert.equal(resolvePruningSettings(pruningConfig(), true, undefined, ' OFF ').mode, 'off');
  });

  test('other override header values change nothing (and never enable pruning)', () => {
    assert.equal(resolvePruningSettings(pruningConfig(), true, undefined, 'on').mode, 'cache-ttl');
    assert.equal(resolvePruningSettings(pruningConfig(), false, undefined, 'cache-ttl').mode, 'off');
    assert.equal(resolvePruningSettings(pruningConfig(), true, undefined, '').mode, 'cache-ttl');
  });

  test('carries the configured thresholds over, with the documented defaults', () => {
    const s = resolvePruningSettings(pruningConfig(), true, undefined);
    assert.deepEqual(
      {
        keepLastAssistants: s.keepLastAssistants,
        softTrimRatio: s.softTrimRatio,
        hardClearRatio: s.hardClearRatio,
        minPrunableToolChars: s.minPrunableToolChars,
        softTrim: s.softTrim,
        hardClear: s.hardClear,
        tools: s.tools,
      },
      {
        keepLastAssistants: 3,
        softTrimRatio: 0.3,
        hardClearRatio: 0.5,
        minPrunableToolChars: 50_000,
        softTrim: { maxChars: 4000, headChars: 1500, tailChars: 1500 },
        hardClear: { enabled: true, placeholder: '[Old tool result content cleared]' },
        tools: { allow: [], deny: [] },
      },
    );
    const custom = resolvePruningSettings(
      pruningConfig({ keepLastAssistants: 1, tools: { allow: ['read*'], deny: ['read_secret'] } }),
      true,
      undefined,
    );
    assert.equal(custom.keepLastAssistants, 1);
    assert.deepEqual(custom.tools, { allow: ['read*'], deny: ['read_secret'] });
  });
});
