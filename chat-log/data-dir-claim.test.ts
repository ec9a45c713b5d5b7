import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { CLAIM_FILE, DataDirInUseError, claimDataDir, thisHost, type ClaimHost } from './data-dir-claim.ts';
import { FileLogBackend } from './store-file.ts';

/** Another process on this host (or another host): pid 4242, running unless `alive` says not. */
function other(opts: Partial<ClaimHost> = {}): ClaimHost {
  return {
    pid: 4242,
    hostname: 'gw-host',
    bootId: 'boot-1',
    alive: () => true,
    processStart: (pid) => (pid === 4242 ? 1000 : 2000),
    ...opts,
  };
}

function logged() {
  const lines: Array<{ message: string; fields: Record<string, unknown> }> = [];
  return {
    lines,
    log: (_l: 'info' | 'warn', message: string, fields: Record<string, unknown>) =>
      lines.push({ message, fields }),
  };
}

test('a claim held by a running gateway on this host refuses a second one, naming the dataDir and the holder', () => {
  const dataDir = tempDir('oda-claim-');
  const first = claimDataDir(dataDir, { host: other() });
  const second = other({ pid: 5000, processStart: (pid) => (pid === 4242 ? 1000 : 3000) });
  assert.throws(
    () => claimDataDir(dataDir, { host: second }),
    (err: unknown) =>
      err instanceof DataDirInUseError &&
      err.message.includes(`dataDir ${dataDir} is in use by another gateway (pid 4242 on host gw-host`) &&
      err.holder.token === first.record.token,
  );
  // A claim made on another host cannot be checked from here: refused too.
  assert.throws(
    () => claimDataDir(dataDir, { host: other({ hostname: 'elsewhere', pid: 4242 }) }),
    DataDirInUseError,
  );
  assert.deepEqual(readdirSync(dataDir), [CLAIM_FILE], 'nothing left behind by the refused claims');
  first.release();
  assert.equal(existsSync(join(dataDir, CLAIM_FILE)), false, 'a clean stop removes the claim');
  claimDataDir(dataDir, { host: second }).release();
});

test('a claim from another host is live while its holder renews it, and stale a minute after it stopped', async () => {
  const dataDir = tempDir('oda-claim-foreign-');
  const held = claimDataDir(dataDir, { host: other({ hostname: 'pod-a' }), heartbeatMs: 20 });
  const path = join(dataDir, CLAIM_FILE);
  const touched = statSync(path).mtimeMs;
  await new Promise((resolve) => setTimeout(resolve, 120));
  assert.ok(statSync(path).mtimeMs > touched, 'the holder touches its claim');
  const successor = other({ hostname: 'pod-b', pid: 1 });
  assert.throws(() => claimDataDir(dataDir, { host: successor }), DataDirInUseError);
  held.release();

  // A holder killed without a word (its pod gone): its claim ages; a minute later it is stale.
  const killed = claimDataDir(dataDir, { host: other({ hostname: 'pod-a' }), heartbeatMs: 0 });
  const later = Date.now() + 61_000;
  const { lines, log } = logged();
  const taken = claimDataDir(dataDir, { host: successor, now: () => later, log, heartbeatMs: 0 });
  assert.equal(taken.record.hostname, 'pod-b');
  assert.match(String(lines[0]?.fields.reason), /holder on host pod-a stopped renewing it 6\d s ago/);
  killed.release();
  assert.ok(existsSync(path), "the old holder's release leaves the new claim alone");
  taken.release();
});

test('a stale claim (its process gone, the pid reused, or this very pid after a restart) is taken over with a log line', () => {
  const cases: Array<[string, Partial<ClaimHost>, RegExp]> = [
    ['pid not running', { pid: 5000, alive: (pid) => pid !== 4242 }, /not running/],
    ['same pid (a container restarted: pid 1 again)', { processStart: () => 9999 }, /this process/],
    ['host rebooted', { pid: 5000, bootId: 'boot-2' }, /rebooted/],
    ['pid reused by another program', { pid: 5000, processStart: () => 7777 }, /another process/],
  ];
  for (const [what, host, reason] of cases) {
    const dataDir = tempDir('oda-claim-stale-');
    const stale = claimDataDir(dataDir, { host: other() });
    const { lines, log } = logged();
    const taken = claimDataDir(dataDir, { host: other(host), log });
    assert.equal(lines.length, 1, what);
    assert.match(
      lines[0]!.message,
      /taking over the claim on dataDir .* of a gateway no longer running/,
      what,
    );
    assert.match(String(lines[0]!.fields.reason), reason, what);
    assert.equal(
      (JSON.parse(readFileSync(join(dataDir, CLAIM_FILE), 'utf8')) as { token: string }).token,
      taken.record.token,
      what,
    );
    // The old holder's stop (had it one) leaves the new claim alone.
    stale.release();
    assert.ok(existsSync(join(dataDir, CLAIM_FILE)), what);
    taken.release();
    assert.deepEqual(readdirSync(dataDir), [], what);
  }
  // A claim file this build cannot read (emptied by a crash) is stale too.
  const dataDir = tempDir('oda-claim-junk-');
  writeFileSync(join(dataDir, CLAIM_FILE), '');
  const { lines, log } = logged();
  claimDataDir(dataDir, { log }).release();
  assert.equal(lines.length, 1);
});

test('the real host: this process reads its own start time, and a gateway store claims and releases its dataDir', async () => {
  const host = thisHost();
  if (process.platform === 'linux') assert.equal(typeof host.processStart(process.pid), 'number');
  assert.equal(host.alive(process.pid), true);
  const dataDir = tempDir('oda-claim-store-');
  const store = new FileLogBackend({ dataDir, claim: true });
  const held = JSON.parse(readFileSync(join(dataDir, CLAIM_FILE), 'utf8')) as {
    pid: number;
    hostname: string;
  };
  assert.equal(held.pid, process.pid);
  assert.equal(held.hostname, host.hostname);
  // A reader (no claim) beside it is fine.
  const reader = new FileLogBackend({ dataDir, indexCheck: 'when-owner-exited' });
  await reader.close();
  assert.ok(existsSync(join(dataDir, CLAIM_FILE)));
  await store.close();
  assert.equal(existsSync(join(dataDir, CLAIM_FILE)), false);
});
