/**
 * The message model the chat log stores, as providers hand it over: normalized roles and content
 * kinds, with images still as their wire sources (the log turns them into attachments). Providers
 * produce it; the log owns it.
 */
import type { ContentPart, MessageEvent } from './format/current.ts';

/** Where an image's bytes come from, as the request carried them. */
export type ImageSource =
  | { readonly kind: 'base64'; readonly mediaType: string; readonly data: string }
  | { readonly kind: 'url'; readonly url: string };

/** An image part before it is stored as an attachment. */
export interface PendingImagePart {
  kind: 'image';
  source: ImageSource;
}

/** A tool result's content before its images are stored. */
export type PendingContentPart =
  | Exclude<ContentPart, { kind: 'image' } | { kind: 'tool-result' }>
  | PendingImagePart
  | (Omit<Extract<ContentPart, { kind: 'tool-result' }>, 'content'> & {
      content: Array<
        | Exclude<Extract<ContentPart, { kind: 'tool-result' }>['content'][number], { kind: 'image' }>
        | PendingImagePart
      >;
    });

/** A message in the log's normalized roles and content kinds, images not yet stored. */
export interface NormalizedMessage {
  role: 'user' | 'model' | 'tool' | 'developer' | 'system' | 'other';
  content: PendingContentPart[];
  /** The message's (or item's) own fields outside its content, as sent (the log's `wire`). */
  wire?: NonNullable<MessageEvent['wire']>;
  /**
   * The id of an earlier item this message stands for (a Responses `item_reference`): never
   * logged, only read when the incoming history is compared with the log.
   */
  refersTo?: string;
}
