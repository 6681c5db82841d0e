--[[
  registerWait: second step of registration, in the partition of the MATCH KEY.
  Creates the wait idempotently. If a buffered event of its match key accepted at
  or after `since` (and not after the deadline) is still within retention, the wait
  is resolved by it at once and that event is consumed. A shaped wait collects the
  buffered events of all its match keys (below).

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>" of waiting waits
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>" of settled waits (for late events)
  KEYS[4] deadlines  {p}:dl  zset waitId scored by deadline
  KEYS[5] inbox      {p}:ib  lex zset "<mk><padded id><eventKey>" of buffered events
  KEYS[6] events     {p}:e   hash "e:<eventKey>" -> event record
  KEYS[7] outbox     {p}:o   stream of resolutions (w=<waitId>, k=<kind>)
  KEYS[8] expiry     {p}:x   zset of records to remove, scored by time
  KEYS[9] parked     {p}:dp  zset of parked deadline slots (includes/parked-deadlines.lua)

  ARGV[1] waitId
  ARGV[2] record       JSON {mk, r, p, j?, m?, tk?, hb?, mx?, ixs?, n?, fk?}: encoded match
                       key, runId, position, externalJobId, raw metadata JSON, token hash,
                       heartbeatMs; a shaped wait's other match keys (any-of) and the index
                       keys of all of them, count, failure match keys
  ARGV[3] timeoutMs    "" or a number: deadline = now + timeoutMs on the Redis clock
  ARGV[4] deadlineMs   "" or an absolute deadline (used when timeoutMs is "")
  ARGV[5] sinceMs      "" or the earliest accepted time a buffered event may have
  ARGV[6] retentionMs  how long a settled wait is kept
  ARGV[7] now          "" = Redis TIME
  ARGV[8] indexKey     "" or the index key of the record's match key (computed here when "")

  A waiting wait's deadline goes in the deadline index, or is parked when it is far
  ahead (includes/parked-deadlines.lua).

  Returns
    { CREATED, wait }    created (its state is `r` when a buffered event resolved it)
    { EXISTS, wait }     the wait existed already: nothing changes
  Appends: the wait's resolved history entry and an outbox entry when resolved at once.
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "wait-index"
--@include "extra-members"
--@include "event-record"
--@include "inbox"
--@include "resolve-by-event"
--@include "tokens"
--@include "parked-deadlines"

--@keys
local waitId, recordJson = ARGV[1], ARGV[2]
local retentionMs = tonumber(ARGV[6])
local now = nowMs(ARGV[7])

local existing = redis.call("HGET", keys.waits, waitId)
if existing then
  return { C_EXISTS, existing }
end

local wait = cjson.decode(recordJson)
wait["s"] = "w"
wait["ca"] = now
local deadline = nil
if ARGV[3] ~= "" then
  deadline = now + tonumber(ARGV[3])
elseif ARGV[4] ~= "" then
  deadline = tonumber(ARGV[4])
end
deadline = registrationExtras(wait, now, deadline)
wait["dl"] = deadline
local since = 0
if ARGV[5] ~= "" then
  since = tonumber(ARGV[5])
  wait["sn"] = since
end
local mk = wait["mk"]
if wait["mx"] ~= nil then
  -- an any-of wait: its other match keys' index members are counted (wait-index.lua)
  wait["xc"] = 1
end
if ARGV[8] ~= "" then
  indexKey(mk, ARGV[8])
end

-- A shaped wait (any-of, count N, failure types) takes the buffered events of all its
-- match keys, earliest accepted first, until N (or a failure type) resolve it; the
-- events taken are matched (out of the inbox) whether or not they resolve it.
if isShaped(wait) then
  local found = {}
  local scan = 16 + (wait["n"] or 1)
  local matchKeys = { mk }
  for _, other in ipairs(wait["mx"] or {}) do
    matchKeys[#matchKeys + 1] = other
  end
  for x, k in ipairs(matchKeys) do
    for _, member in ipairs(bufferedSince(keys.inbox, k, since, scan)) do
      local eventKey = inboxEventKey(member, k)
      local ev = loadEvent(keys.events, eventKey)
      if ev == nil or not isBuffered(ev) or ev["at"] + ev["rt"] < now then
        redis.call("ZREM", keys.inbox, member)
      elseif deadline == nil or ev["at"] <= deadline then
        found[#found + 1] = { member = member, eventKey = eventKey, ev = ev, x = x }
      end
    end
  end
  -- accepted order: stream id (accepted ms, then sequence), then event key (one entry's events)
  table.sort(found, function(a, b)
    local ea, eb = a.ev, b.ev
    if ea["at"] ~= eb["at"] then
      return ea["at"] < eb["at"]
    end
    if ea["sid"] ~= eb["sid"] then
      return #ea["sid"] < #eb["sid"] or (#ea["sid"] == #eb["sid"] and ea["sid"] < eb["sid"])
    end
    return a.eventKey < b.eventKey
  end)
  for _, f in ipairs(found) do
    local ev = f.ev
    local taken, record = takeForShape(keys, waitId, wait, ev, eventRef(ev), f.x, now, retentionMs)
    if taken then
      ev["st"] = "m"
      ev["mw"] = { waitId }
      ev["pl"] = nil
      saveEvent(keys.events, f.eventKey, ev)
      redis.call("ZREM", keys.inbox, f.member)
    end
    if record ~= nil then
      return { C_CREATED, record }
    end
  end
  local record = cjson.encode(wait)
  redis.call("HSET", keys.waits, waitId, record)
  local extra = 0
  for i, member in ipairs(waitMembers(wait, waitId)) do
    local added = redis.call("ZADD", keys.waiting, "0", member)
    if i > 1 then
      extra = extra + added
    end
  end
  if wait["xc"] then
    countExtraMembers(keys.waits, wait, "w", extra)
  end
  if deadline ~= nil then
    indexDeadline(keys, waitId, deadline, now)
  end
  return { C_CREATED, record }
end

-- A buffered event: earliest first, from `since` on.
for _, member in ipairs(bufferedSince(keys.inbox, mk, since, 16)) do
  local eventKey = inboxEventKey(member, mk)
  local ev = loadEvent(keys.events, eventKey)
  if ev == nil or not isBuffered(ev) or ev["at"] + ev["rt"] < now then
    -- expired or no longer buffered: the index entry is stale
    redis.call("ZREM", keys.inbox, member)
  elseif deadline == nil or ev["at"] <= deadline then
    local record = resolveByEvent(keys, waitId, wait, ev, eventRef(ev), now, retentionMs)
    ev["st"] = "m"
    ev["mw"] = { waitId }
    ev["pl"] = nil
    saveEvent(keys.events, eventKey, ev)
    redis.call("ZREM", keys.inbox, member)
    return { C_CREATED, record }
  end
end

-- (the reply is the stored text: the compact form of a plain wait reads the same)
local record = encodeWait(wait)
redis.call("HSET", keys.waits, waitId, record)
redis.call("ZADD", keys.waiting, "0", waitMember(wait, waitId))
if deadline ~= nil then
  indexDeadline(keys, waitId, deadline, now)
end
return { C_CREATED, record }
