--[[
  promoteDeadlines: in one partition, moves the waits of the parked slots that start
  at or before now + reachMs into the deadline index (includes/parked-deadlines.lua),
  earliest slot first, at most maxWaits entries a call. An entry names a wait still
  waiting whose deadline lies in the slot: it is added to the deadline index under
  that deadline; any other entry (the wait settled, expired, or its deadline moved by
  a heartbeat, which indexes the new one itself) is dropped. A slot is taken from its
  end, so a slot read in part keeps its first entries for the next call.

  KEYS[1] parked     {p}:dp  zset of parked slots (member = score = slot start);
                             slot strings "{p}:dp:<slot start>"
  KEYS[2] deadlines  {p}:dl  zset waitId by deadline
  KEYS[3] waits      {p}:w   hash waitId -> wait record

  ARGV[1] reachMs    promote the slots starting at or before now + reachMs
  ARGV[2] idPrefix   "w<partition>.": what the partition's wait ids start with
  ARGV[3] maxWaits   most entries a call reads (at most 1,000: one HMGET of them)
  ARGV[4] now        "" = Redis TIME

  Returns { OK, promoted, dropped, more }   more = 1 when a slot within reach is left
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "parked-deadlines"

--@keys
local reachMs, idPrefix, budget = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local now = nowMs(ARGV[4])

local promoted, dropped = 0, 0
local slots = redis.call("ZRANGEBYSCORE", keys.parked, "-inf", intText(now + reachMs), "LIMIT", 0, 64)
local more = 0
for n, slot in ipairs(slots) do
  if budget <= 0 then
    more = 1
    break
  end
  local key = keys.parked .. ":" .. slot
  local size = redis.call("STRLEN", key)
  local entries = (size - size % WAIT_BODY) / WAIT_BODY
  local take = math.min(entries, budget)
  local from = (entries - take) * WAIT_BODY
  if take > 0 then
    local chunk = redis.call("GETRANGE", key, from, from + take * WAIT_BODY - 1)
    local ids = {}
    for i = 1, take do
      ids[i] = idPrefix .. string.sub(chunk, (i - 1) * WAIT_BODY + 1, i * WAIT_BODY)
    end
    local raws = redis.call("HMGET", keys.waits, unpack(ids))
    local start = tonumber(slot)
    local add = {}
    for i = 1, take do
      local wait = raws[i] and decodeWait(raws[i]) or nil
      local dl = wait and wait["s"] == "w" and wait["dl"] or nil
      if dl ~= nil and dl - dl % SLOT_MS == start then
        add[#add + 1] = intText(dl)
        add[#add + 1] = ids[i]
      else
        dropped = dropped + 1
      end
    end
    if #add > 0 then
      redis.call("ZADD", keys.deadlines, unpack(add))
      promoted = promoted + #add / 2
    end
    budget = budget - take
  end
  if from == 0 then
    redis.call("DEL", key)
    redis.call("ZREM", keys.parked, slot)
  else
    redis.call("SET", key, redis.call("GETRANGE", key, 0, from - 1))
    more = 1
  end
  if n == #slots and #slots == 64 then
    more = 1
  end
end
return { C_OK, promoted, dropped, more }
