/**
 * The read models every chat keeps, by the key the chat state exposes them under. Adding one here
 * is all it takes for ChatLog to fold, checkpoint and (when public) snapshot it.
 */
import type { ReadModel } from './read-model.ts';
import { messagesModel, type MessagesState } from './messages.ts';
import { decisionsModel, type DecisionsState } from './decisions.ts';
import { cacheClockModel, type CacheClockState } from './cache-clock.ts';
import { totalsModel, type TotalsState } from './totals.ts';
import { toolsModel, type ToolsState } from './tools.ts';
import { savingsModel, type SavingsState } from './savings.ts';

export interface ChatModelStates {
  messages: MessagesState;
  decisions: DecisionsState;
  cacheClock: CacheClockState;
  totals: TotalsState;
  tools: ToolsState;
  savings: SavingsState;
}

export type ChatModelKey = keyof ChatModelStates;

export const chatReadModels: { readonly [K in ChatModelKey]: ReadModel<ChatModelStates[K]> } = {
  messages: messagesModel,
  decisions: decisionsModel,
  cacheClock: cacheClockModel,
  totals: totalsModel,
  tools: toolsModel,
  savings: savingsModel,
};

export const chatModelKeys = Object.keys(chatReadModels) as ChatModelKey[];
