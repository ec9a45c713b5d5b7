/**
 * GET /v1/sessions/{id}/attachments/{sha256}: the read-only copy of an image the chat holds, for
 * the log viewer's thumbnails. Only an image one of the chat's messages references is served (an
 * attachment another chat holds answers 404 like an unknown one), with its recorded media type,
 * `x-content-type-options: nosniff` and a CSP that lets nothing in it run.
 */
import { Router } from 'express';
import { promises as fsp } from 'node:fs';
import { OdaError } from '../../lib/errors.ts';
import type { AppContext } from '../app-context.ts';
import { visibleChat } from '../visible-chat.ts';

const SHA256 = /^[0-9a-f]{64}$/;
const READ_PAGE = 1000;
/** Chats whose referenced images are kept in memory (least recently used dropped). */
const MAX_INDEXED_CHATS = 64;
const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif']);

type MediaType = 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif';

interface ImageFacts {
  sha256: string;
  mediaType: MediaType;
  bytes: number;
}

/** The images a chat's log references, caught up by reading only the events after `count`. */
interface ChatImages {
  count: number;
  images: Map<string, ImageFacts>;
}

function imageFacts(part: unknown): ImageFacts | undefined {
  if (typeof part !== 'object' || part === null) return undefined;
  const { kind, attachment } = part as { kind?: unknown; attachment?: unknown };
  if (kind !== 'image' || typeof attachment !== 'object' || attachment === null) return undefined;
  const { sha256, mediaType, bytes } = attachment as Record<string, unknown>;
  if (typeof sha256 !== 'string' || !SHA256.test(sha256)) return undefined;
  if (typeof mediaType !== 'string' || !IMAGE_TYPES.has(mediaType)) return undefined;
  return { sha256, mediaType: mediaType as MediaType, bytes: typeof bytes === 'number' ? bytes : -1 };
}

/** Every image attachment in a message's content, tool results included. */
function collectImages(content: readonly unknown[], into: Map<string, ImageFacts>): void {
  for (const part of content) {
    const facts = imageFacts(part);
    if (facts) into.set(facts.sha256, facts);
    const inner = (part as { kind?: unknown; content?: unknown }).content;
    if ((part as { kind?: unknown }).kind === 'tool-result' && Array.isArray(inner))
      collectImages(inner, into);
  }
}

export function sessionAttachmentRoutes(app: AppContext): Router {
  const r = Router();
  // One catch-up at a time per chat: the thumbnails of a page ask together, and each asks only
  // for the events logged since the previous one.
  const indexed = new Map<string, Promise<ChatImages>>();

  async function catchUp(id: string, known: ChatImages): Promise<ChatImages> {
    for (;;) {
      const events = await app.chatLog.read(id, known.count, READ_PAGE);
      for (const e of events) if (e.type === 'message') collectImages(e.content, known.images);
      known.count += events.length;
      if (events.length < READ_PAGE) return known;
    }
  }

  async function referencedImages(id: string): Promise<Map<string, ImageFacts>> {
    const previous = indexed.get(id) ?? Promise.resolve({ count: 0, images: new Map<string, ImageFacts>() });
    const current = previous.then((known) => catchUp(id, known));
    indexed.delete(id);
    indexed.set(id, current);
    if (indexed.size > MAX_INDEXED_CHATS) indexed.delete(indexed.keys().next().value!);
    try {
      return (await current).images;
    } catch (err) {
      if (indexed.get(id) === current) indexed.delete(id);
      throw err;
    }
  }

  r.get('/v1/sessions/:id/attachments/:sha256', async (req, res) => {
    const sha256 = req.params.sha256;
    if (!SHA256.test(sha256)) {
      throw new OdaError('ODA_ERR_INVALID_REQUEST', 400, 'sha256 must be 64 lowercase hex digits', {
        param: 'sha256',
      });
    }
    // Checked: a chat whose log was removed is the 404 of a chat that never was.
    const { id, header } = await visibleChat(app, req, res, { checked: true });
    const facts = (await referencedImages(id)).get(sha256);
    const missing = () =>
      new OdaError('ODA_ERR_NOT_FOUND', 404, `chat "${id}" holds no image with sha256 ${sha256}`);
    if (!facts) throw missing();
    let bytes: Buffer;
    try {
      // Each team's images are kept apart; a chat's images are in its team's store.
      bytes = await fsp.readFile(app.chatLog.attachments.forTeam(header.team).pathFor(facts));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw missing();
      throw err;
    }
    res.setHeader('content-type', facts.mediaType);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('content-security-policy', "default-src 'none'; sandbox");
    res.setHeader('content-disposition', `inline; filename="${sha256}"`);
    res.setHeader('cache-control', 'private, max-age=86400, immutable');
    res.end(bytes);
  });

  return r;
}
