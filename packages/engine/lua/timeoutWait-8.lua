--[[
  timeoutWait: resolves a wait as timed out, by the event-time rule. It does so only
  if the wait is still `waiting`, now >= its deadline, and no event of its match keys
  accepted at or before the deadline is still unprocessed. Such an event would win:
  the caller retries shortly instead (BACKLOG).

  Unprocessed means what the partition stream's consumer group says: its entries
  accepted at or before the deadline that are pending (delivered, not acknowledged)
  or not yet delivered (after the group's last-delivered id; every entry when the
  group does not exist yet). Their events are judged by their records: an event
  still `p` (appended, not matched; the matcher acknowledges an entry after its
  match) of the wait's match key holds the timeout back; an entry stuck pending
  (a dead matcher's, until it is claimed again) holds back only the waits of its
  events' match keys. When the unprocessed on-time entries are more than SCAN_CAP,
  or carry more than SCAN_CAP events, the script does not look at them: it answers
  BACKLOG, the design's partition-wide rule (every entry accepted <= deadline
  processed first), so that a timeout attempt costs Redis a bounded amount under
  any backlog: the entries are counted before any is read.

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] stream     {p}:s   the partition stream; entry field ks = <eventKey>..., or
                             k = <eventKey> (both forms are read)
  KEYS[6] outbox     {p}:o   stream of resolutions
  KEYS[7] expiry     {p}:x   zset of records to remove
  KEYS[8] events     {p}:e   hash "e:<eventKey>" -> event record

  ARGV[1] waitId
  ARGV[2] retentionMs
  ARGV[3] now          "" = Redis TIME
  ARGV[4] group        the matchers' consumer group on the stream

  Returns
    { RESOLVED, wait }       timed out now
    { NOT_FOUND }            no such wait
    { NOT_WAITING, wait }    settled already: nothing changes
    { NOT_DUE, deadline }    no deadline (""), or not reached yet
    { BACKLOG, deadline }    an on-time event of its match key is still unprocessed, or
                             the partition's unprocessed on-time entries carry more
                             than SCAN_CAP events
  Appends: the resolved history entry and an outbox entry when it times out.
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "event-record"
--@include "stream-entries"
--@include "consumer-group"
--@include "settle"

--@keys
local waitId, retentionMs, group = ARGV[1], tonumber(ARGV[2]), ARGV[4]
local now = nowMs(ARGV[3])

local raw = redis.call("HGET", keys.waits, waitId)
if not raw then
  return { C_NOT_FOUND }
end
local wait = decodeWait(raw)
if wait["s"] ~= "w" then
  return { C_NOT_WAITING, raw }
end
local deadline = wait["dl"]
if deadline == nil then
  return { C_NOT_DUE, "" }
end
if now < deadline then
  return { C_NOT_DUE, tostring(deadline) }
end

local SCAN_CAP = 100
local upTo = intText(deadline) -- as an end id: every entry of that millisecond

-- The event keys of the unprocessed stream entries accepted at or before the
-- deadline; nil when they are more than SCAN_CAP.
local function onTimeUnprocessed()
  if redis.call("EXISTS", keys.stream) == 0 then
    return {}
  end
  local eventKeys = {}
  local function take(entry)
    entryEventKeys(entry, eventKeys)
    return #eventKeys <= SCAN_CAP
  end
  local state = groupState(keys.stream, group)
  local lastDelivered, pending = state and state.lastDelivered or "0-0", state and state.pending or 0
  -- delivered, not acknowledged, up to the deadline (ids only), and not delivered yet:
  -- at most SCAN_CAP entries in all, counted before any is read
  local ids = {}
  if pending > 0 then
    ids = redis.call("XPENDING", keys.stream, group, "-", upTo, SCAN_CAP + 1)
    if #ids > SCAN_CAP then
      return nil
    end
  end
  local undelivered =
    redis.call("XRANGE", keys.stream, "(" .. lastDelivered, upTo, "COUNT", SCAN_CAP + 1 - #ids)
  if #ids + #undelivered > SCAN_CAP then
    return nil
  end
  for _, p in ipairs(ids) do
    local entry = redis.call("XRANGE", keys.stream, p[1], p[1])[1]
    if entry ~= nil and not take(entry) then
      return nil
    end
  end
  for _, entry in ipairs(undelivered) do
    if not take(entry) then
      return nil
    end
  end
  return eventKeys
end

local unprocessed = onTimeUnprocessed()
if unprocessed == nil then
  return { C_BACKLOG, tostring(deadline) }
end
if #unprocessed > 0 then
  for _, record in ipairs(loadEventRecords(keys.events, unprocessed)) do
    local ev = pendingEvent(record)
    -- (of any of the wait's match keys: an any-of wait has several)
    if ev ~= nil and ev["at"] <= deadline and matchKeyNumber(wait, ev["mk"]) ~= nil then
      return { C_BACKLOG, tostring(deadline) }
    end
  end
end

local record = settleWait(keys, waitId, wait, "t", { k = "t", at = now, dl = deadline },
  { at = now, w = "resolved", k = "t", dl = deadline }, now, retentionMs)
return { C_RESOLVED, record }
