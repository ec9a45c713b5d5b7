/**
 * Internal read model: the tools of the chat's latest request (by name and digest) and that
 * request's seq, so a change in the request's tools is recorded as a developer message that binds
 * each added tool to the earlier request it extends.
 */
import { z } from 'zod';
import type { ReadModel } from './read-model.ts';

const toolRef = z.strictObject({ name: z.string(), digest: z.string().regex(/^[0-9a-f]{64}$/) });
const toolsState = z.strictObject({
  last: z.strictObject({ seq: z.number().int().nonnegative(), tools: z.array(toolRef) }).nullable(),
});
export type ToolsState = z.infer<typeof toolsState>;

export const toolsModel: ReadModel<ToolsState> = {
  name: 'tools',
  version: 1,
  internal: true,
  schema: toolsState,
  initial: () => ({ last: null }),
  apply(state, e) {
    if (e.type !== 'request') return state;
    return { last: { seq: e.seq, tools: e.tools.map((t) => ({ name: t.name, digest: t.digest })) } };
  },
};
