--[[
  The one way a waiting wait reaches a terminal state: it leaves the waiting and
  deadline indexes, enters the done index (so later events of its match key are
  recorded as late), is scheduled for removal after retention, and its resolution goes
  on the outbox (entry w = waitId, k = resolution kind, r = the wait record as stored:
  what the dispatcher hands out, read from no other place; t = the trace context text
  of the resolution, when the caller has one). A script that hands the resolution out
  itself (ingestDispatchEvents: the continuation job added in the step that resolves the
  wait) sets `handOff`: where it takes a wait, the wait's record says so
  (continuation_dispatched, pushed by handOff) and no outbox entry is written.
]]
--@include "clock"
--@include "wait-record"
--@include "wait-index"
--@include "expiry"

-- nil, or the script's own hand-off: handOff(waitId, wait) is given each settled wait
-- before it is stored, and answers whether it handed the wait out (continuation-jobs.lua).
local handOff = nil

-- Returns the stored record text (what the transitions reply: no second encode).
-- `member`, when not nil, is the wait's index member as the caller read it (in the
-- current layout); else it is computed, and a legacy member is removed in its place.
-- The done index gets the current layout either way. `trace`, when neither nil nor "",
-- is the resolution's trace context text (the outbox entry's t).
local function settleWait(keys, waitId, wait, state, resolution, historyEntry, now, retentionMs, member, trace)
  wait["s"] = state
  wait["res"] = resolution
  pushHistory(wait, historyEntry)
  local handed = handOff ~= nil and handOff(waitId, wait)
  local record = encodeWait(wait)
  redis.call("HSET", keys.waits, waitId, record)
  if wait["mx"] ~= nil then
    -- an any-of wait: indexed under each of its match keys, whose index keys its record
    -- carries (`ixs`; computed here for a record without them)
    -- (written out, not waitMembers: every helper is a closure made on each call)
    local body = waitIdBody(waitId)
    local ix = wait["ixs"]
    if ix == nil then
      ix = { indexKey(wait["mk"]) }
      for _, mk in ipairs(wait["mx"]) do
        ix[#ix + 1] = indexKey(mk)
      end
    end
    local left, entered = 0, 0
    for i, ik in ipairs(ix) do
      local m = ik .. body
      local gone = redis.call("ZREM", keys.waiting, m)
      local added = redis.call("ZADD", keys.done, "0", m)
      if i > 1 then
        left, entered = left + gone, entered + added
      end
    end
    if wait["xc"] and (left > 0 or entered > 0) then
      -- the counts of its extra members (extra-members.lua countExtraMembers, written out)
      -- (the encoded tenant: the first index key less its two 4-character digests)
      local tenant = string.sub(ix[1], 1, -9)
      for _, c in ipairs({ { "#w", -left }, { "#d", entered } }) do
        if c[2] ~= 0 then
          for _, f in ipairs({ c[1], c[1] .. tenant }) do
            if redis.call("HINCRBY", keys.waits, f, c[2]) <= 0 then
              redis.call("HDEL", keys.waits, f)
            end
          end
        end
      end
    end
  else
    if member then
      redis.call("ZREM", keys.waiting, member)
    else
      member = waitMember(wait, waitId)
      if redis.call("ZREM", keys.waiting, member) == 0 then
        -- indexed before the layout change
        redis.call("ZREM", keys.waiting, indexKey(wait["mk"], nil, true) .. waitIdBody(waitId))
      end
    end
    redis.call("ZADD", keys.done, "0", member)
  end
  if wait["dl"] ~= nil then
    -- (only a wait with a deadline has a deadline index entry)
    redis.call("ZREM", keys.deadlines, waitId)
  end
  scheduleExpiry(keys.expiry, intText(now + retentionMs), "w", waitId)
  if handed then
    -- (handed out by the script itself: no outbox entry)
  elseif trace and trace ~= "" then
    redis.call("XADD", keys.outbox, "*", "w", waitId, "k", resolution["k"], "r", record, "t", trace)
  else
    redis.call("XADD", keys.outbox, "*", "w", waitId, "k", resolution["k"], "r", record)
  end
  return record
end
