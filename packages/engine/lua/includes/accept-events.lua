--[[
  The accept step (acceptEvents; ingestEvents, which dedups first in the same step):
  appendEvents' append and, when the matchers' group has caught up, the match of what
  it appended (acceptEvents' header says how and why).
]]
--@include "codes"
--@include "clock"
--@include "consumer-group"
--@include "append-events"
--@include "match-event"

-- Appends and matches with acceptEvents' ARGV[1..9] as `a` (a[1] keepMs ... a[9]
-- matchUpTo), its events `rows` (a[3] unpacked: unpackRows(a[3], 2)) and its traces
-- argument `traceArg` (nil: none). `jobs` (nil: none) counts the waits whose continuation
-- jobs the step added itself (ingestDispatchEvents, continuation-jobs.lua: `jobs.added`).
-- Returns the script's reply.
local function acceptRows(keys, a, rows, traceArg, jobs)
  -- caught up before this call: no entry after the group's last delivered one, none pending
  local group, consumer = groupAndConsumer(a[7])
  -- (the group's lag when Redis knows it, else a look past its last-delivered id)
  local state = groupState(keys.stream, group)
  local caughtUp = false
  if state and state.pending == 0 then
    if state.lag ~= nil then
      caughtUp = state.lag == 0
    else
      caughtUp = #redis.call("XRANGE", keys.stream, "(" .. state.lastDelivered, "+", "COUNT", "1") == 0
    end
  end

  local sid, codes, existing, fresh, traces, written = appendEventRows(keys, tonumber(a[1]), a[2], rows, traceArg)
  if sid == "" or not caughtUp or #fresh > a[9] + 0 then
    return { sid, codes, existing }
  end

  local now = nowMs(a[2])
  local retentionMs = a[5] + 0
  local matches, settled = {}, 0
  for n, eventKey in ipairs(fresh) do
    local r = matchEntryEvent(keys, sid, eventKey, a[4], retentionMs, now, a[6], traces and traces[n] or "", written[eventKey])
    if r.code ~= C_OK then
      -- (not reached: the record was written just now and names this entry) the entry stays
      -- undelivered, and the matcher runs the match again, which changes nothing done here
      return { sid, codes, existing }
    end
    matches[n] = { r.st, r.matched, r.late, r.collected or {} }
    settled = settled + #r.matched - (r.collected and #r.collected or 0)
  end

  -- matched: delivered to this process's matcher (the group's read position and counts stay
  -- true) and acknowledged. Last, so that a match that raises (Redis keeps a script's writes
  -- before an error) leaves the entry undelivered for the matcher, never acked unmatched.
  -- (where the group's entries-read count is known, its position is set past the entry with
  -- the count one more, as a read and its ack would leave both, without a reply to build)
  if state.entriesRead ~= nil then
    redis.call("XGROUP", "SETID", keys.stream, group, sid, "ENTRIESREAD", state.entriesRead + 1)
  else
    redis.call("XREADGROUP", "GROUP", group, consumer, "COUNT", "1", "STREAMS", keys.stream, ">")
    redis.call("XACK", keys.stream, group, sid)
  end

  -- (the waits whose jobs the step added have no outbox entry)
  local added = jobs and jobs.added or 0
  local handed = nil
  if a[8] ~= "" and settled > added then
    handed = deliverTo(keys.outbox, a[8], tostring(settled - added))
  end
  if added > 0 then
    return { sid, codes, existing, matches, handed or {}, added }
  elseif handed then
    return { sid, codes, existing, matches, handed }
  end
  return { sid, codes, existing, matches }
end
