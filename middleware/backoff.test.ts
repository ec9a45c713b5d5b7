/** The delay a provider asks for, read as the SDKs read it but of any length, and the gateway's own backoff. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askedDelayMs, backoffDelayMs } from './backoff.ts';

const NOW = Date.UTC(2026, 0, 1);

test('askedDelayMs reads retry-after-ms, then retry-after (seconds or HTTP date), of any length', () => {
  const cases: Array<[Record<string, string | string[]>, number | undefined]> = [
    [{}, undefined],
    [{ 'retry-after-ms': '1234' }, 1234],
    [{ 'retry-after-ms': '1500', 'retry-after': '2' }, 1500],
    [{ 'retry-after-ms': '600000' }, 600_000],
    [{ 'retry-after-ms': 'soon', 'retry-after': '3' }, 3000],
    [{ 'retry-after-ms': '-5' }, undefined],
    [{ 'retry-after': '45' }, 45_000],
    [{ 'retry-after': '3600' }, 3_600_000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after': ['7', '9'] }, 7000],
    [{ 'retry-after': new Date(NOW + 90_000).toUTCString() }, 90_000],
    [{ 'retry-after': new Date(NOW - 5_000).toUTCString() }, undefined],
    [{ 'retry-after': 'later' }, undefined],
  ];
  for (const [headers, want] of cases)
    assert.equal(askedDelayMs(headers, NOW), want, JSON.stringify(headers));
});

test('backoffDelayMs doubles from the initial delay up to the maximum, less up to 25% jitter', () => {
  const opts = { initialDelayMs: 500, maxDelayMs: 8000 };
  assert.deepEqual(
    [0, 1, 2, 3, 4, 5].map((a) => backoffDelayMs(a, { ...opts, random: () => 0 })),
    [500, 1000, 2000, 4000, 8000, 8000],
  );
  assert.equal(backoffDelayMs(4, { ...opts, random: () => 1 }), 6000);
});
