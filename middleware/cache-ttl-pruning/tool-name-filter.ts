/**
 * Which tools' results pruning may touch (`pruning.tools.allow` / `deny`): globs where `*` is the
 * only wildcard, matched case-insensitively; deny wins; an empty allow list allows every tool.
 */
import { globMatch } from '../../lib/glob.ts';

export interface ToolNameRules {
  readonly allow: readonly string[];
  readonly deny: readonly string[];
}

/** A pattern made only of `*` matches every name, including one the request does not state. */
function matchesEverything(pattern: string): boolean {
  return /^\*+$/.test(pattern);
}

function matchesAny(patterns: readonly string[], name: string): boolean {
  return patterns.some((pattern) => globMatch(pattern, name, { caseInsensitive: true }));
}

/**
 * True when results of `toolName` may be pruned. A result whose tool name is unknown (no matching
 * tool call in the request) passes only when allow is empty (or holds a bare `*`) and no deny
 * pattern is a bare `*`: a named allow list is a promise to touch only those tools.
 */
export function toolNameAllowed(toolName: string | undefined, rules: ToolNameRules): boolean {
  if (toolName === undefined || toolName === '') {
    if (rules.deny.some(matchesEverything)) return false;
    return rules.allow.length === 0 || rules.allow.some(matchesEverything);
  }
  if (matchesAny(rules.deny, toolName)) return false;
  return rules.allow.length === 0 || matchesAny(rules.allow, toolName);
}
