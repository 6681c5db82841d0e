--[[
  takeQuota: checks a tenant's quotas before a request and takes from its rate
  limiters, in the tenant's own slot (docs/api.md, Quotas). Every check is made before
  anything is taken, so a refusal takes nothing.
  - a count: the tenant's counter ARGV[1] (w = waiting waits, b = buffered events) must
    be below its quota ARGV[2];
  - up to two rate limiters (GCRA: a field holds the theoretical arrival time, ms): the
    tenant's (field ARGV[3], ARGV[4] per second) and a producer's own (field ARGV[5],
    ARGV[6]). A request of n (ARGV[7]) needs min(n, one second's worth) and takes n, so
    a request larger than a second's worth passes once and puts the limiter in debt.
  One HMGET and at most one HSET: the counts and the limiters share the tenant's hash.

  KEYS[1] quota      {<prefix>:q:<tenant>}:c  hash w, b (counts); h, p, p:<producer> (limiters)

  ARGV[1] countField  "" or the counter to check (w, b)
  ARGV[2] countLimit  "" or its quota
  ARGV[3] rateField   "" or the tenant's limiter (h: host requests, p: producer events)
  ARGV[4] perSec      its rate
  ARGV[5] ownField    "" or the producer's own limiter (p:<producer>)
  ARGV[6] ownPerSec   its rate
  ARGV[7] n           requests or events the request takes
  ARGV[8] now         "" = Redis TIME

  Returns
    { OK }
    { OVER_QUOTA, usage }                  the counter is at or over its quota
    { OVER_RATE, which, retryAfterMs }     which = 1 (the tenant's limiter) or 2 (the producer's) has not room
]]
--@include "codes"
--@include "clock"

--@keys
local countField, rateField, ownField = ARGV[1], ARGV[3], ARGV[5]
local n = ARGV[7] + 0
local now = nowMs(ARGV[8])
local held = redis.call("HMGET", keys.quota, countField, rateField, ownField)

if countField ~= "" and (held[1] or 0) + 0 >= ARGV[2] + 0 then
  return { C_OVER_QUOTA, (held[1] or 0) + 0 }
end

-- The limiter's arrival time after this request, or nil and the ms until it would fit.
local function admit(tat, perSec)
  local interval = 1000 / perSec
  local capacity = perSec < 1 and 1 or perSec
  tat = (tat or 0) + 0
  if tat < now then
    tat = now
  end
  local over = tat + (n < capacity and n or capacity) * interval - now - capacity * interval
  if over > 0 then
    return nil, over
  end
  return tat + n * interval
end

local tat, ownTat, wait
if rateField ~= "" then
  tat, wait = admit(held[2], ARGV[4] + 0)
  if tat == nil then
    return { C_OVER_RATE, 1, math.ceil(wait) }
  end
end
if ownField ~= "" then
  ownTat, wait = admit(held[3], ARGV[6] + 0)
  if ownTat == nil then
    return { C_OVER_RATE, 2, math.ceil(wait) }
  end
end
-- (a number as Lua prints it: %.14g, sub-millisecond arrival times kept)
if tat ~= nil and ownTat ~= nil then
  redis.call("HSET", keys.quota, rateField, tostring(tat), ownField, tostring(ownTat))
elseif tat ~= nil then
  redis.call("HSET", keys.quota, rateField, tostring(tat))
elseif ownTat ~= nil then
  redis.call("HSET", keys.quota, ownField, tostring(ownTat))
end
return { C_OK }
