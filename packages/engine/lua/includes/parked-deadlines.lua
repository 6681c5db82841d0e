--[[
  Parked deadlines. A wait whose deadline is between PARK_AHEAD_MS and PARK_HORIZON_MS
  ahead when it is registered does not enter the deadline index then: the body of its
  wait id (WAIT_BODY characters) is appended to the string "<parked>:<slot>" of its
  deadline's slot (slot = the deadline rounded down to SLOT_MS), and the slot is a
  member of the zset `parked`,
  scored by its start (member = score text). promoteDeadlines (the scheduler's sweep)
  moves a slot's waits into the deadline index before the slot starts, so the deadline
  index holds every deadline the scheduler acts on; an entry whose wait is no longer
  waiting with a deadline in that slot (settled, or moved by a heartbeat) is dropped
  there. A parked wait costs its 16 bytes in a shared string instead of a sorted-set
  entry (~120 bytes); a settled wait's entry stays until its slot is promoted, which
  PARK_HORIZON_MS bounds (a string cannot lose bytes from its middle without a copy of
  the rest, too costly for the match's settle): at most a day of 16 bytes, against the
  settled record's ~1,600 kept `retentionMs` (a day by default).
]]
--@include "clock"
--@include "ids"

-- (WAIT_BODY: the length of every wait id's body, src/formats/index-members.ts WAIT_BODY_LENGTH)
local PARK_AHEAD_MS, PARK_HORIZON_MS, SLOT_MS, WAIT_BODY = 300000, 86400000, 60000, 16

-- Indexes a waiting wait's deadline (registration): parked when it is PARK_AHEAD_MS to
-- PARK_HORIZON_MS ahead of now, else in the deadline index.
local function indexDeadline(keys, waitId, deadline, now)
  local ahead = deadline - now
  if ahead < PARK_AHEAD_MS or ahead > PARK_HORIZON_MS then
    redis.call("ZADD", keys.deadlines, intText(deadline), waitId)
    return
  end
  local slot = intText(deadline - deadline % SLOT_MS)
  redis.call("APPEND", keys.parked .. ":" .. slot, waitIdBody(waitId))
  redis.call("ZADD", keys.parked, slot, slot)
end
