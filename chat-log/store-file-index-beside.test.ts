import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileLogBackend } from './store-file.ts';
import { CLAIM_FILE } from './data-dir-claim.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';

test('a reader that checked the index does not mark it clean once a gateway holds the data directory', async () => {
  const dataDir = tempDir('oda-index-beside-');
  const first = new FileLogBackend({ dataDir });
  await first.create({ version: 5, id: 'chat-1', createdAt: 1 });
  await first.close();
  // A reader (log list) checks the index closed cleanly, and owns it meanwhile.
  const reader = new FileLogBackend({ dataDir, indexCheck: 'when-owner-exited' });
  await reader.indexReady();
  // A gateway starts on the data directory meanwhile (on another host: its pid is not one of ours).
  const claim = join(dataDir, CLAIM_FILE);
  writeFileSync(
    claim,
    `${JSON.stringify({ pid: 1, hostname: 'gateway-elsewhere', startedAt: Date.now(), token: 'live' })}\n`,
  );
  await reader.close();
  // That gateway's index, were it marked clean, would be trusted after the gateway crashed.
  rmSync(claim);
  const logs: string[] = [];
  const next = new FileLogBackend({ dataDir, log: (_level, message) => logs.push(message) });
  await next.indexReady();
  await next.close();
  assert.ok(
    logs.includes('chat index was not closed cleanly: bringing it up to date from the chat files'),
    logs.join('\n'),
  );
});
