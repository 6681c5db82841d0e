--[[
  dedupEvents: first step of ingest, for the events of a batch whose EVENT KEY
  (tenant, producer, eventId) lies in this partition. Refuses a duplicate event
  key, else records it `pending` for the dedup window. Events are handled in
  order, so a key repeated inside the batch is PENDING the second time.

  KEYS[1] events    {p}:e  hash; field "d:<eventKey>" holds the dedup record
  KEYS[2] expiry    {p}:x  zset; member "d:<eventKey>" scored by its expiry time

  ARGV[1] windowMs       dedup window
  ARGV[2] now            "" = Redis TIME (tests may fix it)
  ARGV[3..] triples      eventKey, contentHash, record JSON {ty, c, mp}
                         (type, correlation id, match partition)

  Returns one reply per event, in order:
    { CREATED }               recorded pending: append it next
    { PENDING, record }       same content, still pending (an earlier try died
                              before committing, or the same key earlier in this
                              batch): append again, append is idempotent
    { DUPLICATE, record }     same content, already appended
    { CONFLICT, record }      same event key, other content: nothing changes
]]
--@include "common"

local eventsKey, expiryKey = KEYS[1], KEYS[2]
local windowMs = tonumber(ARGV[1])
local now = nowMs(ARGV[2])

local replies = {}
for i = 3, #ARGV, 3 do
  local eventKey, contentHash, recordJson = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local field = "d:" .. eventKey
  local existing = redis.call("HGET", eventsKey, field)
  if existing then
    local rec = cjson.decode(existing)
    if rec["h"] ~= contentHash then
      replies[#replies + 1] = { C_CONFLICT, existing }
    elseif rec["s"] == "a" then
      replies[#replies + 1] = { C_DUPLICATE, existing }
    else
      replies[#replies + 1] = { C_PENDING, existing }
    end
  else
    local rec = cjson.decode(recordJson)
    rec["h"] = contentHash
    rec["s"] = "p"
    redis.call("HSET", eventsKey, field, cjson.encode(rec))
    redis.call("ZADD", expiryKey, now + windowMs, field)
    replies[#replies + 1] = { C_CREATED }
  end
end
return replies
