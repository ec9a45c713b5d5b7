import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
let hooked = false;

/**
 * A new directory under the system's temp dir, removed with everything in it when the test file's
 * process exits (node's test runner gives each file its own process), so a run leaves no data
 * directories behind, whatever a test did with them and whether it passed.
 */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  if (!hooked) {
    hooked = true;
    process.on('exit', () => {
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}
