import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FileLogBackend } from '../chat-log/store-file.ts';
import { tempDir } from '../test/helpers/temp-dir.ts';
import { runCli, COMMANDS, type CommandEntry } from './cli.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe('runCli', () => {
  const seen: (readonly string[])[] = [];
  const table: Record<string, CommandEntry> = {
    'log check': { usage: 'log check <file>', summary: 'check', run: async (args) => (seen.push(args), 0) },
    version: { usage: 'version', summary: 'print the version', run: async () => 3 },
  };

  test('routes two-word and one-word commands, passing the rest', async () => {
    const c = capture();
    assert.equal(await runCli(['log', 'check', 'a.jsonl', '--x'], c.io, table), 0);
    assert.deepEqual(seen.at(-1), ['a.jsonl', '--x']);
    assert.equal(await runCli(['version'], c.io, table), 3);
  });

  test('unknown commands: "<command>: unknown command" and the usage, exit 2', async () => {
    for (const [argv, name] of [
      [['log', 'read', 'x'], 'log read'],
      [['keys', 'new'], 'keys new'],
      [['frobnicate'], 'frobnicate'],
      [['log', '--all'], 'log'],
    ] as const) {
      const c = capture();
      assert.equal(await runCli(argv, c.io, table), 2);
      assert.equal(c.err[0], `${name}: unknown command`);
      assert.ok(c.err.includes('usage: oda-gateway <command> [args]'));
      assert.ok(c.err.some((l) => l.includes('log check <file>')));
    }
  });

  test('help prints the usage (exit 0); no command prints it as an error (exit 2)', async () => {
    const help = capture();
    assert.equal(await runCli(['--help'], help.io), 0);
    assert.ok(help.out.some((l) => l.startsWith('  log check <file>')));
    assert.ok(help.out.some((l) => l.startsWith('  keys new')));
    const none = capture();
    assert.equal(await runCli([], none.io), 2);
    assert.equal(none.err[0], 'usage: oda-gateway <command> [args]');
  });

  test('<command> --help prints its usage on stdout (exit 0) instead of taking --help for a file or chat', async () => {
    for (const command of ['log check', 'log read', 'log list', 'keys new']) {
      const c = capture();
      assert.equal(await runCli([...command.split(' '), '--help'], c.io), 0, command);
      assert.equal(c.out[0], `usage: oda-gateway ${COMMANDS[command]!.usage}`, command);
      assert.deepEqual(c.err, [], command);
    }
  });

  test('the real table has log check and keys new', () => {
    assert.ok(Object.hasOwn(COMMANDS, 'log check'));
    assert.ok(Object.hasOwn(COMMANDS, 'keys new'));
  });
});

test('output to a reader that went away (log read | head -1) ends quietly with exit 0', async () => {
  const dataDir = tempDir('oda-cli-pipe-');
  const backend = new FileLogBackend({ dataDir });
  await backend.create({ version: 5, id: 'long', createdAt: 1 });
  const text = 'x'.repeat(200);
  await backend.append(
    'long',
    Array.from({ length: 2000 }, () => ({
      type: 'message' as const,
      role: 'user' as const,
      content: [{ kind: 'text' as const, text }],
    })),
    1,
  );
  await backend.close();
  const bin = fileURLToPath(new URL('../bin/oda-gateway.mjs', import.meta.url));
  const child = spawn(process.execPath, [bin, 'log', 'read', 'long', '--data-dir', dataDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  // Read the first line, then go away, as `head -1` does.
  await new Promise<void>((resolve) =>
    child.stdout.once('data', () => {
      child.stdout.destroy();
      resolve();
    }),
  );
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  assert.equal(code, 0, stderr);
  assert.doesNotMatch(stderr, /EPIPE|Error/);
});
