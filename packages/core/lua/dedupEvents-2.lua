--[[
  dedupEvents: first step of ingest, for the events of a batch whose EVENT KEY
  (tenant, producer, eventId) lies in this partition. Claims each event key for the
  dedup window, or refuses it when it was claimed before with other content.
  Whether a claimed key was already appended is for the append step to say (its
  event record exists), so no third step has to mark the claim.

  KEYS[1] events    {p}:e  hash; field "d:<eventKey>" holds the dedup record
  KEYS[2] expiry    {p}:x  zset; one member per call for the keys it claimed,
                           "D:" .. eventKey1 .. eventKey2 ... (encoded event keys are
                           self-delimiting), scored by their expiry time

  ARGV[1] windowMs       dedup window
  ARGV[2] now            "" = Redis TIME (tests may fix it)
  ARGV[3..] pairs        eventKey, dedup record "<content hash>|<match partition>"
                         (the hash covers type, correlation id, occurredAt and
                         payload, so equal records mean equal content)

  Returns one code per event, in order:
    CREATED     claimed now: append it next
    PENDING     claimed before with the same content: append it (append answers
                whether it was appended before)
    CONFLICT    claimed before with other content: nothing changes
]]
--@include "common"

local eventsKey, expiryKey = KEYS[1], KEYS[2]
local windowMs = tonumber(ARGV[1])
local claimed = {}

local replies = {}
for i = 3, #ARGV, 2 do
  local eventKey, record = ARGV[i], ARGV[i + 1]
  local field = "d:" .. eventKey
  if redis.call("HSETNX", eventsKey, field, record) == 1 then
    claimed[#claimed + 1] = eventKey
    replies[#replies + 1] = C_CREATED
  else
    local existing = redis.call("HGET", eventsKey, field)
    if string.byte(existing, 1) == 123 then
      -- a JSON record of an earlier version: {h = content hash, mp = match partition}
      local old = cjson.decode(existing)
      existing = old["h"] .. "|" .. old["mp"]
    end
    if existing == record then
      replies[#replies + 1] = C_PENDING
    else
      replies[#replies + 1] = C_CONFLICT
    end
  end
end
if #claimed > 0 then
  redis.call("ZADD", expiryKey, nowMs(ARGV[2]) + windowMs, "D:" .. table.concat(claimed))
end
return replies
