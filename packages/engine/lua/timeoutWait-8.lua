--[[
  timeoutWait: resolves waits of one partition as timed out, by the event-time rule.
  A wait times out only if it is still `waiting`, now >= its deadline, and no event of
  its match keys accepted at or before the deadline is still unprocessed. Such an event
  would win: the caller retries shortly instead (BACKLOG). Each wait is judged on its
  own; a call takes several so that the consumer group's state and the scan of the
  unprocessed entries are read once for all of them (a step of the scheduler fires up
  to 50 waits, mostly of few partitions).

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
  any backlog: the entries are counted before any is read. The call scans once, up
  to the latest deadline among its due waits; only when that scan is over the cap are
  the due waits' own ranges scanned (what a call for each alone would read), earliest
  deadline first, up to the first that is over the cap too (a range holds every
  earlier one). The caller sends at most TIMEOUT_CALL_WAITS waits a call (Lua's
  unpack takes some 8,000 values; timeoutMany splits more).

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] stream     {p}:s   the partition stream; entry field ks = <eventKey>..., or
                             k = <eventKey> (both forms are read)
  KEYS[6] outbox     {p}:o   stream of resolutions
  KEYS[7] expiry     {p}:x   zset of records to remove
  KEYS[8] events     {p}:e   hash "e:<eventKey>" -> event record

  ARGV[1] retentionMs
  ARGV[2] now          "" = Redis TIME
  ARGV[3] group        the matchers' consumer group on the stream
  ARGV[4..] waitIds    the waits to time out (of this partition), one or more

  Returns two elements per wait id, in order: a code and its value
    RESOLVED, wait           timed out now
    NOT_FOUND, ""            no such wait
    NOT_WAITING, wait        settled already: nothing changes (also a repeated id)
    NOT_DUE, deadline        no deadline (""), or not reached yet
    BACKLOG, deadline        an on-time event of its match key is still unprocessed, or
                             the partition's unprocessed on-time entries carry more
                             than SCAN_CAP events
  Appends: per wait timed out, the resolved history entry and an outbox entry.
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "event-record"
--@include "stream-entries"
--@include "consumer-group"
--@include "settle"

--@keys
local retentionMs, group = tonumber(ARGV[1]), ARGV[3]
local now = nowMs(ARGV[2])
local SCAN_CAP = 100

-- the stream's existence and the group's state, read at most once per call
local streamRead, streamExists, lastDelivered, pending = false, false, "0-0", 0
local function readStream()
  if not streamRead then
    streamRead = true
    streamExists = redis.call("EXISTS", keys.stream) == 1
    if streamExists then
      local state = groupState(keys.stream, group)
      if state then
        lastDelivered, pending = state.lastDelivered, state.pending
      end
    end
  end
  return streamExists
end

-- The event keys of the unprocessed stream entries accepted at or before `deadline`;
-- nil when they are more than SCAN_CAP.
local function onTimeUnprocessed(deadline)
  if not readStream() then
    return {}
  end
  local upTo = intText(deadline) -- as an end id: every entry of that millisecond
  local eventKeys = {}
  local function take(entry)
    entryEventKeys(entry, eventKeys)
    return #eventKeys <= SCAN_CAP
  end
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

-- The pending events (decoded records) of a list of event keys.
local function pendingEvents(eventKeys)
  local events = {}
  if #eventKeys > 0 then
    for _, record in ipairs(loadEventRecords(keys.events, eventKeys)) do
      local ev = pendingEvent(record)
      if ev ~= nil then
        events[#events + 1] = ev
      end
    end
  end
  return events
end

-- Whether an event of `events` accepted at or before the deadline is one of the wait's
-- match keys (an any-of wait has several).
local function heldBack(wait, deadline, events)
  for _, ev in ipairs(events) do
    if ev["at"] <= deadline and matchKeyNumber(wait, ev["mk"]) ~= nil then
      return true
    end
  end
  return false
end

local ids = {}
for i = 4, #ARGV do
  ids[#ids + 1] = ARGV[i]
end
local raws = redis.call("HMGET", keys.waits, unpack(ids))

local reply, due, first, repeats = {}, {}, {}, {}
local latest = nil
for i, waitId in ipairs(ids) do
  if first[waitId] then
    -- a repeated id answers what its first occurrence left (below)
    repeats[#repeats + 1] = { i, first[waitId] }
  else
    first[waitId] = i
    local raw = raws[i]
    local code, value = nil, ""
    if not raw then
      code = C_NOT_FOUND
    else
      local wait = decodeWait(raw)
      local deadline = wait["dl"]
      if wait["s"] ~= "w" then
        code, value = C_NOT_WAITING, raw
      elseif deadline == nil then
        code = C_NOT_DUE
      elseif now < deadline then
        code, value = C_NOT_DUE, tostring(deadline)
      else
        due[#due + 1] = { i, waitId, wait, deadline }
        if latest == nil or deadline > latest then
          latest = deadline
        end
      end
    end
    reply[2 * i - 1], reply[2 * i] = code, value
  end
end

if latest ~= nil then
  -- one scan up to the latest deadline serves every due wait, unless it is over the cap;
  -- then each wait scans its own range, in order of deadline: a range holds every earlier
  -- one, so once one is over the cap so is every later one (BACKLOG, not scanned again)
  local shared = onTimeUnprocessed(latest)
  local eventsOf = {}
  if shared then
    local events = pendingEvents(shared)
    for n = 1, #due do
      eventsOf[n] = events
    end
  else
    local order = {}
    for n = 1, #due do
      order[n] = n
    end
    table.sort(order, function(a, b)
      return due[a][4] < due[b][4]
    end)
    local byDeadline, over = {}, false
    for _, n in ipairs(order) do
      local deadline = due[n][4]
      if not over and byDeadline[deadline] == nil then
        local own = onTimeUnprocessed(deadline)
        if own then
          byDeadline[deadline] = pendingEvents(own)
        else
          over = true
        end
      end
      eventsOf[n] = byDeadline[deadline] or false
    end
  end
  -- settled in the order given (their outbox entries too)
  for n, d in ipairs(due) do
    local i, waitId, wait, deadline = d[1], d[2], d[3], d[4]
    local events = eventsOf[n]
    if not events or heldBack(wait, deadline, events) then
      reply[2 * i - 1], reply[2 * i] = C_BACKLOG, tostring(deadline)
    else
      local record = settleWait(keys, waitId, wait, "t", { k = "t", at = now, dl = deadline },
        { at = now, w = "resolved", k = "t", dl = deadline }, now, retentionMs)
      reply[2 * i - 1], reply[2 * i] = C_RESOLVED, record
    end
  end
end
for _, r in ipairs(repeats) do
  local code, value = reply[2 * r[2] - 1], reply[2 * r[2]]
  if code == C_RESOLVED then
    code = C_NOT_WAITING
  end
  reply[2 * r[1] - 1], reply[2 * r[1]] = code, value
end
return reply
