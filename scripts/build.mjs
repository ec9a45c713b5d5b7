#!/usr/bin/env node
// Compiles the gateway's entry points to plain JavaScript, so a deployment runs them with `node`
// alone: no TypeScript loader in the process (tsx's loader thread holds 35-40 MB of RSS for the
// life of the process). Our own modules are bundled into one file per entry; packages stay imports
// of node_modules. `npm start` runs this first (prestart), then `node .build/server/main.mjs`.
//
// Layout: `.build/<dir>/<name>.mjs` for `<dir>/<name>.ts`, one level below `.build`, so paths our
// modules resolve from their own location (`../../ui/`, `../../openapi.yaml` from server/routes/)
// land on the same repository files from the bundle. test/e2e/compiled-start.test.ts checks that
// the compiled gateway serves both.
//
// Usage: node scripts/build.mjs [entry.ts ...]   (default: server/main.ts)
import { build } from 'esbuild';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const OUT_DIR = '.build';

/** Where the compiled file of `entry` (a path relative to the repository root) is written. */
function compiledPath(entry) {
  if (!/^[a-z-]+\/[a-z-]+\.ts$/.test(entry)) {
    throw new Error(`build: entry "${entry}" must be <dir>/<name>.ts, one level below the root`);
  }
  return `${OUT_DIR}/${entry.replace(/\.ts$/, '.mjs')}`;
}

/**
 * Compiles `entries`; resolves to the absolute paths written. Each file is written beside its place
 * and renamed into it, so a gateway starting meanwhile loads the old file or the new one, never half.
 */
export async function buildEntries(entries = ['server/main.ts']) {
  const written = [];
  for (const entry of entries) {
    const outfile = `${root}${compiledPath(entry)}`;
    const result = await build({
      absWorkingDir: root,
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20.18',
      // Packages are loaded from node_modules as they are (better-sqlite3's native addon among them).
      packages: 'external',
      // Class and function names stay as written: log lines name error classes by them.
      keepNames: true,
      sourcemap: 'linked',
      logLevel: 'warning',
      write: false,
    });
    mkdirSync(dirname(outfile), { recursive: true });
    // The source map first, so the file that links to it never points at a missing one.
    const files = [...result.outputFiles].sort(
      (a, b) => Number(b.path.endsWith('.map')) - Number(a.path.endsWith('.map')),
    );
    for (const file of files) {
      const temp = `${file.path}.${process.pid}.tmp`;
      try {
        writeFileSync(temp, file.contents);
        renameSync(temp, file.path);
      } catch (e) {
        rmSync(temp, { force: true });
        throw e;
      }
    }
    written.push(outfile);
  }
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const written = await buildEntries(args.length > 0 ? args : undefined);
  // On stderr: stdout is where `npm start` prints the gateway's JSON log lines.
  for (const file of written) process.stderr.write(`built ${file.slice(root.length)}\n`);
}
