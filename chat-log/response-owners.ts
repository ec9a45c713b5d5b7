/**
 * Which chat (and team, and provider) each stored response belongs to. A Responses answer with an
 * id is recorded here as soon as the gateway sees the id, before the client does (a stream's first
 * event that names it), and again if it is logged in another chat; `previous_response_id` then
 * continues that chat, and with
 * teams the stored-response routes (`GET`/`DELETE /v1/responses/{id}`, `cancel`, `input_items`)
 * reach only the responses of the caller's own team (SPEC section 9).
 *
 * Two backends, chosen like the chat log's: the file store keeps one small JSON file per id in a
 * directory sharded by the id's digest (`dataDir/response-owners/ab/<sha256>.json`), so nothing is
 * held in memory and the record outlives a restart; the Redis store keeps one key per id under the
 * store's prefix (`<prefix>response:<id>`), shared by every replica.
 *
 * The output items of a logged response (`msg_...`, `fc_...`, `rs_...`) are recorded the same way,
 * apart (`dataDir/response-item-owners/`, `<prefix>response-item:<id>`): an `item_reference` in a
 * later request's `input` reaches the stored item, so with teams it is checked like a response.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { sha256Hex } from '../lib/sha256.ts';
import type { RedisRun } from './redis-lock.ts';
import type { LogBackend } from './store.ts';
import { FileLogBackend } from './store-file.ts';
import { RedisLogBackend } from './store-redis.ts';

/** The chat that logged a response, the team whose request created it, the provider that served it. */
export interface ResponseOwner {
  chatId: string;
  team?: string;
  provider: string;
}

export interface ResponseOwners {
  /** The owner recorded for `responseId`, or undefined when the gateway never saw it. */
  get(responseId: string): Promise<ResponseOwner | undefined>;
  /** Records (or replaces) the owner of `responseId`. */
  set(responseId: string, owner: ResponseOwner): Promise<void>;
}

/** The longest response id recorded; provider ids are far shorter (`resp_` and 50 hex digits). */
const MAX_ID = 512;

/** What a store records owners of: responses, or the output items of logged responses. */
export type OwnedKind = 'response' | 'item';

/** Where each kind lives: its directory under `dataDir`, its Redis key part, the id's field in a record. */
const PLACES: Record<OwnedKind, { dir: string; key: string; field: string }> = {
  response: { dir: 'response-owners', key: 'response:', field: 'responseId' },
  item: { dir: 'response-item-owners', key: 'response-item:', field: 'itemId' },
};

const ownerShape = z.strictObject({
  chatId: z.string().min(1),
  team: z.string().min(1).optional(),
  provider: z.string().min(1),
});

function checkId(responseId: string, kind: OwnedKind): void {
  if (responseId.length === 0 || responseId.length > MAX_ID) {
    throw new RangeError(`${kind} id must be 1-${MAX_ID} characters, got ${responseId.length}`);
  }
}

/** The stored form: exactly the owner's fields (a caller's extra properties are not kept). */
function serialize(responseId: string, owner: ResponseOwner, kind: OwnedKind): string {
  const parsed = ownerShape.parse({
    chatId: owner.chatId,
    provider: owner.provider,
    ...(owner.team !== undefined && { team: owner.team }),
  });
  return JSON.stringify({ [PLACES[kind].field]: responseId, ...parsed });
}

/** A stored record read back; a damaged one, or one of another id, is treated as absent. */
function deserialize(
  responseId: string,
  text: string | null | undefined,
  kind: OwnedKind,
): ResponseOwner | undefined {
  if (!text) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { [PLACES[kind].field]: storedId, ...rest } = value as Record<string, unknown>;
  if (storedId !== responseId) return undefined;
  const owner = ownerShape.safeParse(rest);
  return owner.success ? owner.data : undefined;
}

/** One small file per id under `dataDir/response-owners/` (items: `response-item-owners/`), written by rename. */
export class FileResponseOwners implements ResponseOwners {
  private readonly dir: string;

  constructor(
    dataDir: string,
    private readonly kind: OwnedKind = 'response',
  ) {
    this.dir = join(dataDir, PLACES[kind].dir);
  }

  /** The record's file: named by the id's digest, so any id is a safe name. */
  private fileOf(responseId: string): { shard: string; file: string } {
    const digest = sha256Hex(responseId);
    const shard = join(this.dir, digest.slice(0, 2));
    return { shard, file: join(shard, `${digest}.json`) };
  }

  async get(responseId: string): Promise<ResponseOwner | undefined> {
    checkId(responseId, this.kind);
    try {
      return deserialize(responseId, await readFile(this.fileOf(responseId).file, 'utf8'), this.kind);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async set(responseId: string, owner: ResponseOwner): Promise<void> {
    checkId(responseId, this.kind);
    const text = serialize(responseId, owner, this.kind);
    const { shard, file } = this.fileOf(responseId);
    await mkdir(shard, { recursive: true });
    // Written aside and renamed: a reader sees the old record or the new one, never half of one.
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(tmp, text, 'utf8');
      await rename(tmp, file);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw e;
    }
  }
}

/** One Redis key per response id under the store's prefix, on the chat log's connection. */
export class RedisResponseOwners implements ResponseOwners {
  constructor(
    private readonly run: RedisRun,
    private readonly prefix: string,
    private readonly kind: OwnedKind = 'response',
  ) {}

  private key(responseId: string): string {
    return `${this.prefix}${PLACES[this.kind].key}${responseId}`;
  }

  async get(responseId: string): Promise<ResponseOwner | undefined> {
    checkId(responseId, this.kind);
    return deserialize(responseId, await this.run((r) => r.get(this.key(responseId))), this.kind);
  }

  async set(responseId: string, owner: ResponseOwner): Promise<void> {
    checkId(responseId, this.kind);
    const text = serialize(responseId, owner, this.kind);
    await this.run((r) => r.set(this.key(responseId), text));
  }
}

/**
 * The owners' store that goes with a chat-log backend: Redis beside Redis, else files beside the
 * file store's chats (or under `dataDir` for any other backend).
 */
export function responseOwnersFor(
  backend: LogBackend,
  dataDir: string,
  kind: OwnedKind = 'response',
): ResponseOwners {
  if (backend instanceof RedisLogBackend) {
    return new RedisResponseOwners((op) => backend.run(op), backend.prefix, kind);
  }
  return new FileResponseOwners(backend instanceof FileLogBackend ? backend.dataDir : dataDir, kind);
}
