// Types of scripts/test-files.mjs (plain JavaScript: scripts/run-tests.mjs runs without tsx).
export function testFiles(root: string): string[];
export function failedInTap(text: string, root: string): string[];
export function failedTests(tapFile: string, root: string): string[];
