--[[
  consumeWait: records the first claimer of a settled wait's continuation. Exactly
  one caller ever gets first = 1; later callers see who was first.

  KEYS[1] waits      {p}:w   hash waitId -> wait record

  ARGV[1] waitId
  ARGV[2] tenantPrefix   encoded tenant of the caller ("" = admin)
  ARGV[3] worker         the claimer's name
  ARGV[4] now            "" = Redis TIME

  Returns
    { OK, first (1|0), wait }
    { NOT_FOUND }
    { NOT_RESOLVED }       still waiting: nothing changes
  Appends: the consumed history entry for the first claimer.
]]
--@include "codes"
--@include "clock"
--@include "wait-record"

--@keys
local waitId, tenantPrefix, worker = ARGV[1], ARGV[2], ARGV[3]
local now = nowMs(ARGV[4])

local wait = loadOwnWait(keys.waits, waitId, tenantPrefix)
if wait == nil then
  return { C_NOT_FOUND }
end
if wait["s"] == "w" then
  return { C_NOT_RESOLVED }
end
if wait["con"] ~= nil then
  return { C_OK, 0, cjson.encode(wait) }
end
wait["con"] = { by = worker, at = now }
pushHistory(wait, { at = now, w = "consumed", by = worker })
saveWait(keys.waits, waitId, wait)
return { C_OK, 1, cjson.encode(wait) }
