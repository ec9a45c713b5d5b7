import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { toolNameAllowed, type ToolNameRules } from './tool-name-filter.ts';

describe('toolNameAllowed', () => {
  const cases: Array<[string, string | undefined, ToolNameRules, boolean]> = [
    ['empty allow allows every tool', 'exec', { allow: [], deny: [] }, true],
    ['exact allow', 'read_file', { allow: ['read_file'], deny: [] }, true],
    ['not in allow', 'exec', { allow: ['read_file'], deny: [] }, false],
    ['allow glob', 'read_file', { allow: ['read*'], deny: [] }, true],
    ['allow is case-insensitive', 'Read_File', { allow: ['READ_*'], deny: [] }, true],
    ['deny is case-insensitive', 'EXEC', { allow: [], deny: ['exec'] }, false],
    ['deny wins over allow', 'read_secret', { allow: ['read*'], deny: ['*secret'] }, false],
    ['deny wins over an exact allow', 'exec', { allow: ['exec'], deny: ['exec'] }, false],
    ['deny * denies everything', 'read', { allow: [], deny: ['*'] }, false],
    ['* in the middle', 'mcp__github__search', { allow: ['mcp__*__search'], deny: [] }, true],
    ['? is not a wildcard', 'read', { allow: ['rea?'], deny: [] }, false],
    ['? matches itself', 'rea?', { allow: ['rea?'], deny: [] }, true],
    ['. is literal', 'readXfile', { allow: ['read.file'], deny: [] }, false],
    ['regex specials are literal', 'a+b', { allow: ['a+b'], deny: [] }, true],
    ['glob anchors at both ends', 'xread', { allow: ['read'], deny: [] }, false],
    ['unknown name passes with empty allow', undefined, { allow: [], deny: ['exec'] }, true],
    ['unknown name passes with allow *', undefined, { allow: ['*'], deny: [] }, true],
    ['unknown name fails a named allow list', undefined, { allow: ['read*'], deny: [] }, false],
    ['unknown name fails deny *', undefined, { allow: [], deny: ['*'] }, false],
    ['empty name counts as unknown', '', { allow: ['read*'], deny: [] }, false],
  ];
  for (const [name, toolName, rules, expected] of cases) {
    test(name, () => assert.equal(toolNameAllowed(toolName, rules), expected));
  }
});
