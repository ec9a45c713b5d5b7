/**
 * The marker trimming at the compaction point puts between a tool result's head and tail
 * (SPEC section 5). Trimming writes it; the config check measures it (head + marker + tail must fit
 * in thresholdChars), so it sits in lib, below both.
 */
export const TRIM_MARKER = '\n\n[... tool result middle pruned ...]\n\n';
