/**
 * One tool result a pruning projection changes; the shape of an entry of the chat log's `pruning`
 * event (`chat-log/format/v4.ts`).
 */
export type PruningAction = 'soft' | 'cleared';

export interface PruningProjectionEntry {
  readonly callId: string;
  readonly action: PruningAction;
  /** sha256 hex of the result's text before pruning touched it (see `toolResultDigest`). */
  readonly digest: string;
}
