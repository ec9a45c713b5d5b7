// The import rule of the layers is executable: ESLint refuses an upward import in every room, and
// the tree as committed has none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

const root = new URL('..', import.meta.url).pathname;
const eslint = new ESLint({ cwd: root });

async function restrictedImports(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: `${root}${filePath}` });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

const upward: Array<[file: string, importPath: string]> = [
  ['lib/x.ts', '../config/config.ts'],
  ['config/x.ts', '../chat-log/chat-log.ts'],
  ['chat-log/x.ts', '../providers/provider.ts'],
  ['chat-log/x.ts', '../scripts/cli.ts'],
  ['providers/x.ts', '../middleware/pipeline.ts'],
  ['providers/openai/x.ts', '../../server/app.ts'],
  ['middleware/x.ts', '../server/app.ts'],
  ['middleware/x.ts', '../providers/openai/request-view.ts'],
  ['server/routes/x.ts', '../../providers/anthropic/anthropic-format.ts'],
];

for (const [file, importPath] of upward) {
  test(`an import of ${importPath} from ${file} is refused`, async () => {
    const messages = await restrictedImports(
      file,
      `import { a } from '${importPath}';\nexport const b = a;\n`,
    );
    assert.equal(messages.length, 1, `expected one restricted import, got ${JSON.stringify(messages)}`);
  });
}

test('downward imports pass', async () => {
  for (const [file, importPath] of [
    ['server/x.ts', '../middleware/pipeline.ts'],
    ['middleware/x.ts', '../providers/provider.ts'],
    ['providers/x.ts', '../chat-log/chat-log.ts'],
    ['chat-log/x.ts', '../config/config.ts'],
    ['config/x.ts', '../lib/glob.ts'],
  ] as const) {
    assert.deepEqual(
      await restrictedImports(file, `import { a } from '${importPath}';\nexport const b = a;\n`),
      [],
    );
  }
});

test('the committed tree has no upward import', async () => {
  const results = await eslint.lintFiles(['lib', 'config', 'chat-log', 'providers', 'middleware', 'server']);
  const found = results.flatMap((r) =>
    r.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => `${r.filePath}:${m.line}`),
  );
  assert.deepEqual(found, []);
});
