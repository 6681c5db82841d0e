--[[
  matchEvent: runs the match for ONE stream entry of a partition.
  - every `waiting` wait of the event's match key that the event may resolve
    (accepted >= its `since`, accepted <= its deadline) is resolved by it, up to
    the fan-out cap (waits it may not resolve do not count towards the cap); a
    shaped wait (any-of: indexed under each of its match keys; count N) collects it
    and is resolved by its Nth distinct event or an event of a failure type;
  - a waiting wait whose deadline lies before the accepted time, and every settled
    wait of the match key, gets the event recorded as late;
  - if it resolved no wait, the event is buffered in the inbox for its retention
    (status `b`, or `l` when it was recorded late somewhere), so a later wait of
    its match key can still take it.
  Idempotent: re-running it for an entry already processed changes nothing and
  returns what the first run did. An entry whose event key was appended under
  another entry id is ignored (DUPLICATE).

  KEYS[1] events     {p}:e   hash "e:<eventKey>" -> event record
  KEYS[2] waits      {p}:w   hash waitId -> wait record
  KEYS[3] waiting    {p}:iw  lex zset "<index key><wait id body>" (index key: either layout)
  KEYS[4] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[5] deadlines  {p}:dl  zset waitId by deadline
  KEYS[6] inbox      {p}:ib  lex zset "<mk><padded id><eventKey>"
  KEYS[7] outbox     {p}:o   stream of resolutions
  KEYS[8] expiry     {p}:x   zset of records to remove

  ARGV[1] streamId     the entry being processed
  ARGV[2] eventKey     the encoded event key of one event of the entry
  ARGV[3] fanoutCap    most waits one event resolves
  ARGV[4] retentionMs  how long a settled wait is kept
  ARGV[5] now          "" = Redis TIME
  ARGV[6] idPrefix     "w<partition>.": the wait ids of this partition start with it
  ARGV[7] handoff      "" = none; else "<group> <consumer>": when the event settled a wait,
                       the outbox's undelivered entries (at most fanoutCap, oldest first)
                       are delivered in that group to that consumer (XREADGROUP) and
                       replied: the dispatcher of the same process hands them out at once
                       (rendezvous start), no blocking read in between; they stay pending
                       in the group until its ack, so a crash leaves them for a claim
  ARGV[8..] trace      absent (nothing sent) or the match's trace context text: written
                       on the outbox entries of the resolutions (field t), and the reply
                       then names the registration context of each wait it resolved

  Returns
    { OK, status, matchedWaitIds, lateWaitIds, collectedWaitIds?, registrationTraces?, handed? }
                 status: m matched, b buffered, l late (and buffered); matchedWaitIds:
                 every wait that took the event; collectedWaitIds: those of them that
                 only collected it (a count-N wait short of N: still waiting), the
                 others are settled (absent without a trace when none); registrationTraces (only with a trace): per
                 matched wait, its record's tc ("" for none); handed (only with a
                 handoff that delivered some): the outbox entries as XREADGROUP gives
                 them ({id, {field, value, ...}}, ...); the elements before it are then
                 all present ({} for none)
    { DUPLICATE, originalStreamId }               the event key belongs to another entry
    { NOT_FOUND }                                 no event record (expired): nothing to do
  Appends: resolved / late_event history entries, outbox entries for resolutions.
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "wait-index"
--@include "event-record"
--@include "inbox"
--@include "expiry"
--@include "resolve-by-event"

--@keys
local streamId, eventKey = ARGV[1], ARGV[2]
-- (+ 0 converts by arithmetic: cheaper than a tonumber call)
local fanoutCap, retentionMs = ARGV[3] + 0, ARGV[4] + 0
local now = nowMs(ARGV[5])
local idPrefix = ARGV[6]
local handoff = ARGV[7]
local trace = ARGV[8] or ""

local ev = loadEvent(keys.events, eventKey)
if ev == nil then
  return { C_NOT_FOUND }
end
if ev["sid"] ~= streamId then
  return { C_DUPLICATE, ev["sid"] }
end
if ev["st"] ~= "p" then
  -- processed before: answer what the first run did (a buffered event may since
  -- have been taken by a registration; that is not this run's doing)
  if ev["mo"] == "m" then
    return { C_OK, "m", ev["mw"] or {}, ev["lf"] or {}, ev["mc"] or {} }
  end
  return { C_OK, ev["mo"] or ev["st"], {}, ev["lf"] or {} }
end

local mk = ev["mk"]
local at = ev["at"]
local ref = eventRef(ev)
local matched, late = {}, {}
-- (made only when a wait only collects the event: most matches have none)
local collected = nil
-- (only with a trace: no table, no reply element otherwise)
local registrations = trace ~= "" and {} or nil

local function noteLate(waitId, wait)
  wait["late"] = wait["late"] or {}
  wait["late"][#wait["late"] + 1] = ref
  pushHistory(wait, { at = now, w = "late_event", ev = ref })
  saveWait(keys.waits, waitId, wait)
  late[#late + 1] = waitId
end

-- Page through the waiting waits of the match key until `fanoutCap` are resolved:
-- waits this event may not resolve (since after it, deadline before it) do not use
-- up the cap. Resolved waits leave the index, so pages continue after the last member.
-- (the record carries the index key of its match key, `ix`, and the legacy one, `ik`;
-- records of older versions carry `ik` only, or neither)
local ik = indexKey(mk, ev["ix"])
-- The settled waits of the match key (for late events), read before this event settles
-- any: when they and the waits it resolves fit in one page of fanoutCap, a read after
-- the resolutions gives this page and the waits resolved now; else it is read again.
local first, last = "[" .. ik, "(" .. ik .. "\255"
local settledBefore = redis.call("ZRANGEBYLEX", keys.done, first, last, "LIMIT", "0", ARGV[3])

-- The waits indexed before the layout change are under the legacy index key: given by
-- the record (`ik`), or computed for a record of an earlier version (no `ix`); a record
-- with `ix` alone says the indexes hold no legacy member. Pass 1 reads the current
-- range, pass 2 the legacy one, whose members settleWait replaces (it is handed none).
local lik = ev["ik"]
if lik == nil and ev["ix"] == nil then
  lik = indexKey(mk, ik, true)
end
local passes = lik == nil and 1 or 2
for pass = 1, passes do
  local from, to = first, last
  if pass == 2 then
    from, to = "[" .. lik, "(" .. lik .. "\255"
  end
  while #matched < fanoutCap do
    local page = redis.call("ZRANGEBYLEX", keys.waiting, from, to, "LIMIT", "0", ARGV[3])
    for _, member in ipairs(page) do
      if #matched >= fanoutCap then
        break
      end
      local waitId = memberWaitId(idPrefix, member)
      local wait = loadWait(keys.waits, waitId)
      -- (an index key may be shared by another match key: the wait's own must be this one)
      -- (an any-of wait is indexed under each of its match keys: x is this one's number)
      local x = wait ~= nil and (wait["mk"] == mk and 1 or matchKeyNumber(wait, mk)) or nil
      if x ~= nil and wait["s"] == "w" and at >= (wait["sn"] or 0) then
        if wait["dl"] ~= nil and at > wait["dl"] then
          noteLate(waitId, wait)
        elseif isShaped(wait) then
          -- collected, or resolving it (N events, a failure type); taken either way
          local taken, record = takeForShape(keys, waitId, wait, ev, ref, x, now, retentionMs, pass == 1 and member or nil, trace)
          if taken then
            matched[#matched + 1] = waitId
            if record == nil then
              -- collected only: still waiting (the count of waiting waits is unchanged)
              collected = collected or {}
              collected[#collected + 1] = waitId
            end
            if registrations then
              registrations[#matched] = wait["tc"] or ""
            end
          end
        else
          -- (the member names this wait: its index key is the wait's, as mk is)
          resolveByEvent(keys, waitId, wait, ev, ref, now, retentionMs, pass == 1 and member or nil, trace)
          matched[#matched + 1] = waitId
          if registrations then
            registrations[#matched] = wait["tc"] or ""
          end
        end
      end
      from = "(" .. member
    end
    if #page < fanoutCap then
      break
    end
  end
end

local settledNow = nil
local members = settledBefore
if #settledBefore + #matched > fanoutCap then
  settledNow = {}
  for _, waitId in ipairs(matched) do
    settledNow[waitId] = true
  end
  members = redis.call("ZRANGEBYLEX", keys.done, first, last, "LIMIT", "0", ARGV[3])
end
for pass = 1, passes do
  if pass == 2 then
    -- (a wait settled now is in the done index under the current layout, never the legacy one)
    members = redis.call("ZRANGEBYLEX", keys.done, "[" .. lik, "(" .. lik .. "\255", "LIMIT", "0", ARGV[3])
    settledNow = nil
  end
  for _, member in ipairs(members) do
    local waitId = memberWaitId(idPrefix, member)
    -- (a wait this very event just resolved is not late for it: not even loaded)
    local wait = not (settledNow and settledNow[waitId]) and loadWait(keys.waits, waitId) or nil
    -- settled before, not by this very event
    if wait ~= nil and matchKeyNumber(wait, mk) ~= nil and wait["s"] ~= "w" and not resolvedBy(wait, ev)
       and at >= (wait["sn"] or 0) then
      noteLate(waitId, wait)
    end
  end
end

if #matched > 0 then
  ev["st"] = "m"
  ev["pl"] = nil
else
  -- nothing resolved: buffered for a later wait, also when it was late for some
  -- (status `l` then, still in the inbox)
  if #late > 0 then
    ev["st"] = "l"
  else
    ev["st"] = "b"
  end
  redis.call("ZADD", keys.inbox, "0", inboxMember(mk, streamId, eventKey))
  scheduleExpiry(keys.expiry, intText(at + ev["rt"]), "b", eventKey)
end
ev["mo"] = ev["st"]
ev["ix"] = nil -- (only the match reads them)
ev["ik"] = nil
if #matched > 0 then ev["mw"] = matched end
if #late > 0 then ev["lf"] = late end
ev["mc"] = collected
saveEvent(keys.events, eventKey, ev)
-- (only when a wait was settled: the event wrote outbox entries)
if handoff ~= "" and #matched > (collected and #collected or 0) then
  local space = string.find(handoff, " ", 1, true)
  -- (pcall: a missing group leaves the entries to the blocking read, the match stands)
  local read = redis.pcall("XREADGROUP", "GROUP", string.sub(handoff, 1, space - 1), string.sub(handoff, space + 1),
    "COUNT", ARGV[3], "STREAMS", keys.outbox, ">")
  if type(read) == "table" and read[1] then
    return { C_OK, ev["st"], matched, late, collected or {}, registrations or {}, read[1][2] }
  end
end
if registrations then
  return { C_OK, ev["st"], matched, late, collected or {}, registrations }
end
if collected then
  return { C_OK, ev["st"], matched, late, collected }
end
return { C_OK, ev["st"], matched, late }
