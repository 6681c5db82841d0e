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

  Returns { OK, handled, remainingDue (0|1), expiredWaits }
    expiredWaits: flat (encoded match key, runId, position, waitId) of each wait removed,
    so the caller can drop its run-index entry (another partition: forgetRunPositions)
]]
--@include "common"

local expiryKey, waitsKey, doneKey, eventsKey, inboxKey, rejectedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local limit = tonumber(ARGV[1])
local now = nowMs(ARGV[2])

local function expireEvent(eventKey)
  redis.call("HDEL", eventsKey, "e:" .. eventKey)
end

-- Calls fn(eventKey) for each encoded event key of a group member's body.
local function eachPart(body, fn)
  local pos = 1
  while pos <= #body do
    local after = skipParts(body, 3, pos)
    fn(string.sub(body, pos, after - 1))
    pos = after
  end
end

local function expireDedup(eventKey)
  redis.call("HDEL", eventsKey, "d:" .. eventKey)
end

local expiredWaits = {}
local due = redis.call("ZRANGEBYSCORE", expiryKey, "-inf", now, "LIMIT", 0, limit)
for _, member in ipairs(due) do
  local kind, rest = string.sub(member, 1, 1), string.sub(member, 3)
  if kind == "E" then
    eachPart(rest, expireEvent)
  elseif kind == "D" then
    eachPart(rest, expireDedup)
  elseif kind == "w" then
    local wait = loadWait(waitsKey, rest)
    if wait ~= nil then
      redis.call("ZREM", doneKey, waitMember(wait, rest))
      redis.call("HDEL", waitsKey, rest)
      expiredWaits[#expiredWaits + 1] = wait["mk"]
      expiredWaits[#expiredWaits + 1] = wait["r"]
      expiredWaits[#expiredWaits + 1] = wait["p"]
      expiredWaits[#expiredWaits + 1] = rest
    end
  elseif kind == "e" then
    expireEvent(rest)
  elseif kind == "d" then
    expireDedup(rest)
  elseif kind == "j" then
    redis.call("HDEL", rejectedKey, rest)
  elseif kind == "b" then
    local field = "e:" .. rest
    local ev = loadJson(eventsKey, field)
    if ev ~= nil and (ev["st"] == "b" or ev["st"] == "l") then
      redis.call("ZREM", inboxKey, ev["mk"] .. padId(ev["sid"]) .. rest)
      if ev["st"] == "b" then
        ev["st"] = "x"
      end
      ev["pl"] = nil
      saveJson(eventsKey, field, ev)
    end
  end
  redis.call("ZREM", expiryKey, member)
end
local more = 0
if #due == limit then
  more = 1
end
return { C_OK, #due, more, expiredWaits }
