--[[
  recordRejection: remembers a refused event (no payload) under its match key, so
  `explain` can say `rejected_signal`. Capped per match key (newest kept) and
  forgotten after retention.

  KEYS[1] rejected   {p}:rj  hash "<mk>" -> JSON array of refusals, newest last
  KEYS[2] expiry     {p}:x   zset; member "j:<mk>" scored by its expiry time

  ARGV[1] matchKey   encoded (tenant, type, correlationId)
  ARGV[2] refusal    JSON {pr, id?, reason, detail?}
  ARGV[3] cap        most refusals kept per match key
  ARGV[4] keepMs     how long they are kept after the last one
  ARGV[5] now        "" = Redis TIME

  Returns { OK, count kept }
]]
--@include "codes"
--@include "clock"
--@include "hash-records"
--@include "expiry"

--@keys
local matchKey, refusalJson, cap, keepMs = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local now = nowMs(ARGV[5])

local list = loadJson(keys.rejected, matchKey) or {}
local refusal = cjson.decode(refusalJson)
refusal["at"] = now
list[#list + 1] = refusal
while #list > cap do
  table.remove(list, 1)
end
saveJson(keys.rejected, matchKey, list)
scheduleExpiry(keys.expiry, now + keepMs, "j", matchKey)
return { C_OK, #list }
