--[[
  dedupEvent: first step of ingest, in the partition of the EVENT KEY
  (tenant, producer, eventId). Refuses a duplicate event key, else records it
  `pending` for the dedup window.

  KEYS[1] events    {p}:e  hash; field "d:<eventKey>" holds the dedup record
  KEYS[2] expiry    {p}:x  zset; member "d:<eventKey>" scored by its expiry time

  ARGV[1] eventKey       encoded (tenant, producer, id)
  ARGV[2] contentHash    canonical hash of the event's content
  ARGV[3] record         JSON {ty, c, mp}: type, correlation id, match partition
  ARGV[4] windowMs       dedup window
  ARGV[5] now            "" = Redis TIME (tests may fix it)

  Returns
    { CREATED }               recorded pending: append it next
    { PENDING, record }       same content, still pending (an earlier try died
                              before committing): append again, append is idempotent
    { DUPLICATE, record }     same content, already appended
    { CONFLICT, record }      same event key, other content: nothing changes
]]
--@include "common"

local eventsKey, expiryKey = KEYS[1], KEYS[2]
local eventKey, contentHash, recordJson = ARGV[1], ARGV[2], ARGV[3]
local windowMs = tonumber(ARGV[4])
local now = nowMs(ARGV[5])

local field = "d:" .. eventKey
local existing = redis.call("HGET", eventsKey, field)
if existing then
  local rec = cjson.decode(existing)
  if rec["h"] ~= contentHash then
    return { C_CONFLICT, existing }
  end
  if rec["s"] == "a" then
    return { C_DUPLICATE, existing }
  end
  return { C_PENDING, existing }
end

local rec = cjson.decode(recordJson)
rec["h"] = contentHash
rec["s"] = "p"
redis.call("HSET", eventsKey, field, cjson.encode(rec))
redis.call("ZADD", expiryKey, now + windowMs, field)
return { C_CREATED }
