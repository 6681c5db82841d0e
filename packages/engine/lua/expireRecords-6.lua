--[[
  expireRecords: removes what has outlived its time in one partition, a bounded
  number of records per call (the sweeper calls it repeatedly):
    "w:<waitId>"    a settled wait past retention: its record and done-index entry
    "e:<eventKey>"  an event record past the dedup window (a never-matched event
                    without its record no longer holds back a timeout: timeoutWait)
    "d:<eventKey>"  a dedup record past the dedup window
    "E:<eventKey><eventKey>..." / "D:<eventKey>..."  the same for the event or
                    dedup records one ingest call wrote (one member per call; an
                    encoded event key is three length-prefixed parts, self-delimiting)
    "b:<eventKey>"  a buffered event past its retention: it leaves the inbox and
                    drops its payload; `buffered` becomes `expired` (`late` stays)
    "j:<matchKey>"  the refusals recorded for a match key

  KEYS[1] expiry     {p}:x   zset of records to remove, scored by time
  KEYS[2] waits      {p}:w   hash waitId -> wait record
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] events     {p}:e   hash of event and dedup records
  KEYS[5] inbox      {p}:ib  lex zset "<mk><padded id><eventKey>"
  KEYS[6] rejected   {p}:rj  hash "<mk>" -> refusals

  ARGV[1] limit      most members handled (a group member counts once)
  ARGV[2] now        "" = Redis TIME

  Returns { OK, handled, remainingDue (0|1), expiredWaits, expiredBuffered }
    expiredWaits: flat (encoded match key, runId, position, waitId) of each wait removed,
    so the caller can drop its run-index entry (another partition: forgetRunPositions)
    expiredBuffered: the encoded match key of each buffered event that left the inbox
    (the caller lowers its tenant's buffered count)
]]
--@include "codes"
--@include "clock"
--@include "parts"
--@include "wait-record"
--@include "wait-index"
--@include "extra-members"
--@include "event-record"
--@include "inbox"
--@include "expiry"

--@keys
local limit = tonumber(ARGV[1])
local now = nowMs(ARGV[2])

local expiredWaits, expiredBuffered = {}, {}
local due = redis.call("ZRANGEBYSCORE", keys.expiry, "-inf", now, "LIMIT", 0, limit)
for _, member in ipairs(due) do
  local kind, rest = expiryEntry(member)
  if kind == "E" then
    for _, eventKey in ipairs(splitEventKeys(rest, {})) do
      deleteEvent(keys.events, eventKey)
    end
  elseif kind == "D" then
    for _, eventKey in ipairs(splitEventKeys(rest, {})) do
      deleteDedup(keys.events, eventKey)
    end
  elseif kind == "w" then
    local wait = loadWait(keys.waits, rest)
    if wait ~= nil then
      if wait["mx"] ~= nil then
        -- an any-of wait: a member under each of its match keys (those of the others counted)
        local ms = waitMembers(wait, rest)
        if wait["xc"] then
          local gone = 0
          for i = 2, #ms do
            gone = gone + redis.call("ZREM", keys.done, ms[i])
          end
          redis.call("ZREM", keys.done, ms[1])
          countExtraMembers(keys.waits, wait, "d", -gone)
        else
          redis.call("ZREM", keys.done, unpack(ms))
        end
      elseif redis.call("ZREM", keys.done, waitMember(wait, rest)) == 0 then
        -- indexed before the layout change
        redis.call("ZREM", keys.done, indexKey(wait["mk"], nil, true) .. waitIdBody(rest))
      end
      redis.call("HDEL", keys.waits, rest)
      expiredWaits[#expiredWaits + 1] = wait["mk"]
      expiredWaits[#expiredWaits + 1] = wait["r"]
      expiredWaits[#expiredWaits + 1] = wait["p"]
      expiredWaits[#expiredWaits + 1] = rest
    end
  elseif kind == "e" then
    deleteEvent(keys.events, rest)
  elseif kind == "d" then
    deleteDedup(keys.events, rest)
  elseif kind == "j" then
    redis.call("HDEL", keys.rejected, rest)
  elseif kind == "b" then
    local ev = loadEvent(keys.events, rest)
    if ev ~= nil and isBuffered(ev) then
      if redis.call("ZREM", keys.inbox, inboxMember(ev["mk"], ev["sid"], rest)) == 1 then
        expiredBuffered[#expiredBuffered + 1] = ev["mk"]
      end
      if ev["st"] == "b" then
        ev["st"] = "x"
      end
      ev["pl"] = nil
      saveEvent(keys.events, rest, ev)
    end
  end
  redis.call("ZREM", keys.expiry, member)
end
local more = 0
if #due == limit then
  more = 1
end
return { C_OK, #due, more, expiredWaits, expiredBuffered }
