--[[
  The one way a waiting wait reaches a terminal state: it leaves the waiting and
  deadline indexes, enters the done index (so later events of its match key are
  recorded as late), is scheduled for removal after retention, and its resolution goes
  on the outbox (entry w = waitId, k = resolution kind).
]]
--@include "clock"
--@include "wait-record"
--@include "wait-index"
--@include "expiry"

local function settleWait(keys, waitId, wait, state, resolution, historyEntry, now, retentionMs)
  wait["s"] = state
  wait["res"] = resolution
  pushHistory(wait, historyEntry)
  saveWait(keys.waits, waitId, wait)
  local member = waitMember(wait, waitId)
  redis.call("ZREM", keys.waiting, member)
  redis.call("ZADD", keys.done, "0", member)
  redis.call("ZREM", keys.deadlines, waitId)
  scheduleExpiry(keys.expiry, intText(now + retentionMs), "w", waitId)
  redis.call("XADD", keys.outbox, "*", "w", waitId, "k", resolution["k"], "r", redis.call("HGET", keys.waits, waitId))
end
