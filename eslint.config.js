import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Layers import only downward: server -> middleware -> providers -> chat-log -> config -> lib.
 * Each entry forbids, for the files of one room (its tests included), the rooms above it.
 * bench/, scripts/ and test/ sit on top and may import anything.
 */
const above = {
  lib: ['config', 'chat-log', 'providers', 'middleware', 'server', 'scripts', 'ui'],
  config: ['chat-log', 'providers', 'middleware', 'server', 'scripts', 'ui'],
  'chat-log': ['providers', 'middleware', 'server', 'scripts', 'ui'],
  providers: ['middleware', 'server', 'scripts', 'ui'],
  middleware: ['server', 'scripts', 'ui'],
};
/** The pipeline and the routes never import a specific provider, only the adapter interface. */
const specificProvider = {
  group: ['**/providers/openai/**', '**/providers/anthropic/**', '**/providers/responses/**'],
  message: 'use the FormatAdapter from providers/registry.ts, not a specific provider.',
};
const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
const layerRules = Object.entries(above).map(([room, forbidden]) => ({
  files: [`${room}/**/*.ts`],
  rules: restrict([
    {
      group: forbidden.flatMap((r) => [`**/${r}/*`, `**/${r}/**`]),
      message: `${room}/ sits below the room it imports: move the shared piece down instead (see README, Layout).`,
    },
  ]),
}));
const providerFreeRules = [
  {
    files: ['middleware/**/*.ts'],
    ignores: ['**/*.test.ts', '**/__fixtures__/**'],
    rules: restrict([
      specificProvider,
      {
        group: above.middleware.flatMap((r) => [`**/${r}/*`, `**/${r}/**`]),
        message:
          'middleware/ sits below the room it imports: move the shared piece down instead (see README, Layout).',
      },
    ]),
  },
  { files: ['server/**/*.ts'], ignores: ['**/*.test.ts'], rules: restrict([specificProvider]) },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', '.bench-out/', '.tmp/', '.build/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        structuredClone: 'readonly',
        performance: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  ...layerRules,
  ...providerFreeRules,
);
