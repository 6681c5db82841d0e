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
--@include "match-event"

--@keys
local streamId, eventKey = ARGV[1], ARGV[2]
local now = nowMs(ARGV[5])
local handoff = ARGV[7]
local trace = ARGV[8] or ""

local r = matchEntryEvent(keys, streamId, eventKey, ARGV[3], ARGV[4] + 0, now, ARGV[6], trace)
if r.code == C_NOT_FOUND then
  return { C_NOT_FOUND }
elseif r.code == C_DUPLICATE then
  return { C_DUPLICATE, r.sid }
elseif r.again then
  if r.collected then
    return { C_OK, r.st, r.matched, r.late, r.collected }
  end
  return { C_OK, r.st, r.matched, r.late }
end
local matched, late, collected, registrations = r.matched, r.late, r.collected, r.registrations
-- (only when a wait was settled: the event wrote outbox entries)
if handoff ~= "" and #matched > (collected and #collected or 0) then
  -- (consumer-group.lua's deliverTo written out: a helper is one more closure made on every
  -- match call, layout.keyspace.test.ts)
  local space = string.find(handoff, " ", 1, true)
  -- (pcall: a missing group leaves the entries to the blocking read, the match stands)
  local read = redis.pcall("XREADGROUP", "GROUP", string.sub(handoff, 1, space - 1), string.sub(handoff, space + 1),
    "COUNT", ARGV[3], "STREAMS", keys.outbox, ">")
  if type(read) == "table" and read[1] then
    return { C_OK, r.st, matched, late, collected or {}, registrations or {}, read[1][2] }
  end
end
if registrations then
  return { C_OK, r.st, matched, late, collected or {}, registrations }
end
if collected then
  return { C_OK, r.st, matched, late, collected }
end
return { C_OK, r.st, matched, late }
