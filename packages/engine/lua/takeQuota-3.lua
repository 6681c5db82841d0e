--[[
  takeQuota: checks a tenant's quotas before a request and takes from its rate
  limiters, in the tenant's own slot {<prefix>:q:<tenant>} (docs/api.md, Quotas). Every
  check is made before anything is taken, so a refusal takes nothing.
  - a count: the tenant's counter ARGV[1] (w = waiting waits, b = buffered events) must
    be below its quota ARGV[2];
  - up to two rate limiters (GCRA: a key holds the theoretical arrival time, ms): the
    tenant's (KEYS[2], ARGV[3] per second) and a producer's own (KEYS[3], ARGV[4]). A
    request of n (ARGV[5]) needs min(n, one second's worth) and takes n, so a request
    larger than a second's worth passes once and puts the limiter in debt.

  KEYS[1] counts     {q:<tenant>}:c   hash w -> waiting waits, b -> buffered events
  KEYS[2] rate       {q:<tenant>}:rh (host requests) or :rp (producer events): the tenant's limiter
  KEYS[3] ownRate    {q:<tenant>}:rp:<producer>: the producer's own limiter

  ARGV[1] countField  "" or the counter to check (w, b)
  ARGV[2] countLimit  "" or its quota
  ARGV[3] perSec      "" or the rate of KEYS[2]
  ARGV[4] ownPerSec   "" or the rate of KEYS[3]
  ARGV[5] n           requests or events the request takes
  ARGV[6] now         "" = Redis TIME

  Returns
    { OK }
    { OVER_QUOTA, usage }                  the counter is at or over its quota
    { OVER_RATE, which, retryAfterMs }     which = 1 (KEYS[2]) or 2 (KEYS[3]) has not room
]]
--@include "codes"
--@include "clock"

--@keys
local n = ARGV[5] + 0
local now = nowMs(ARGV[6])

if ARGV[1] ~= "" then
  local usage = (redis.call("HGET", keys.counts, ARGV[1]) or 0) + 0
  if usage >= ARGV[2] + 0 then
    return { C_OVER_QUOTA, usage }
  end
end

-- The limiter's arrival time after this request, or nil and the ms until it would fit.
local function admit(key, perSec)
  local interval = 1000 / perSec
  local capacity = perSec < 1 and 1 or perSec
  local tat = (redis.call("GET", key) or 0) + 0
  if tat < now then
    tat = now
  end
  local need = (n < capacity and n or capacity) * interval
  local over = tat + need - now - capacity * interval
  if over > 0 then
    return nil, over
  end
  return tat + n * interval
end

local tat, ownTat, wait
if ARGV[3] ~= "" then
  tat, wait = admit(keys.rate, ARGV[3] + 0)
  if tat == nil then
    return { C_OVER_RATE, 1, math.ceil(wait) }
  end
end
if ARGV[4] ~= "" then
  ownTat, wait = admit(keys.ownRate, ARGV[4] + 0)
  if ownTat == nil then
    return { C_OVER_RATE, 2, math.ceil(wait) }
  end
end
-- (a limiter key lives as long as its debt, and a second more)
if tat ~= nil then
  redis.call("SET", keys.rate, string.format("%.3f", tat), "PX", math.ceil(tat - now) + 1000)
end
if ownTat ~= nil then
  redis.call("SET", keys.ownRate, string.format("%.3f", ownTat), "PX", math.ceil(ownTat - now) + 1000)
end
return { C_OK }
