/**
 * The Lua scripts of the Redis chat store (`store-redis.ts`). Each runs atomically in Redis, which
 * is what keeps replicas from interleaving: creating a chat, appending a batch only onto the count
 * it was numbered from, and rebuilding activity members from what each chat holds at that moment.
 * Each is safe to run again after its reply was lost (see store-redis-connection.ts): told that it
 * is a repeat, creating and appending recognise what their first run stored.
 */

// KEYS: header, events, last, chats, ids, activity[, team activity];
// ARGV: id, header, last, member, repeat, events...
// `repeat` is '1' when an earlier run's reply was lost: a header that is exactly this one was
// written by that run, so the chat counts as created.
export const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[5] == '1' and redis.call('GET', KEYS[1]) == ARGV[2] then return 1 end
  return 0
end
redis.call('DEL', KEYS[2])
for i = 6, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], 0, ARGV[1])
redis.call('ZADD', KEYS[6], 0, ARGV[4])
if KEYS[7] then redis.call('ZADD', KEYS[7], 0, ARGV[4]) end
return 1`;

// KEYS: header, events, last, activity[, team activity]; ARGV: count, now, id, repeat, events...
// Replies {1, new count} when appended, {0, count} when the list is not at the batch's count, {-1, 0}
// when the chat does not exist, and {2, new count} for a repeat (`repeat` '1': an earlier run's
// reply was lost) that finds the batch already stored: a batch can only ever land at its own count,
// so the lines from there are either exactly its lines or it was never stored. (Only another writer
// storing the very same lines, same time to the millisecond and the same numbers, could look alike.)
// The chat's activity member moves from its last time to now (both written by this code, as digits).
export const APPEND = `
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local n = redis.call('LLEN', KEYS[2])
local count = tonumber(ARGV[1])
local k = #ARGV - 4
if n ~= count then
  if ARGV[4] == '1' and n >= count + k then
    local stored = redis.call('LRANGE', KEYS[2], count, count + k - 1)
    for i = 1, k do
      if stored[i] ~= ARGV[i + 4] then return {0, n} end
    end
    return {2, count + k}
  end
  return {0, n}
end
for i = 5, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
local old = redis.call('GET', KEYS[3])
local member = string.rep('0', 16 - #ARGV[2]) .. ARGV[2] .. ' ' .. ARGV[3]
if old then
  local was = string.rep('0', 16 - #old) .. old .. ' ' .. ARGV[3]
  redis.call('ZREM', KEYS[4], was)
  if KEYS[5] then redis.call('ZREM', KEYS[5], was) end
end
redis.call('ZADD', KEYS[4], 0, member)
if KEYS[5] then redis.call('ZADD', KEYS[5], 0, member) end
redis.call('SET', KEYS[3], ARGV[2])
return {1, n + k}`;

// Rebuilds activity members and id-set members of the chats in ARGV[2..] (ARGV[1]: the key
// prefix), reading each chat's time and team in the script so a concurrent append cannot leave a
// stale member behind. Every id goes into the id set, also one whose keys were lost (listings skip
// it, having no header), so the id set counts as many chats as the chat set once rebuilt. Replies
// how many activity members it added.
export const REINDEX = `
local p = ARGV[1]
local added = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  redis.call('ZADD', p .. 'ids', 0, id)
  local h = redis.call('GET', p .. 'chat:' .. id .. ':header')
  if h then
    local ok, header = pcall(cjson.decode, h)
    local last = redis.call('GET', p .. 'chat:' .. id .. ':last')
    if ok and type(header) == 'table' and last then
      local member = string.rep('0', 16 - #last) .. last .. ' ' .. id
      added = added + redis.call('ZADD', p .. 'activity', 0, member)
      if type(header.team) == 'string' then
        redis.call('ZADD', p .. 'activity:team:' .. header.team, 0, member)
      end
    end
  end
end
return added`;
