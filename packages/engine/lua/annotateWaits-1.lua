--[[
  annotateWaits: one timeline entry of the same kind on each of several waits of a
  partition (internal: any tenant), with no record in the reply: the dispatcher's
  continuation_dispatched for the waits of one step, the sweeper's sweeper_rescheduled,
  ingest's duplicate_ignored. annotateWait is the one-wait form whose reply is the wait.

  Each wait gets its entry as annotate.lua writes one: appended as text where it can be.

  KEYS[1] waits      {p}:w   hash waitId -> wait record

  ARGV[1] now            "" = Redis TIME
  ARGV[2] what           history entry kind
  ARGV[3] once           "1" = skip a wait whose history has an entry of this kind with
                         the same detail (annotateWait's ARGV[5])
  ARGV[4..] pairs        waitId, detail (a JSON object merged into the entry; neither
                         `w` nor `at` among its fields)

  Returns { OK, recorded }   the number of waits that got the entry (a wait that does
                             not exist, or has it already with `once`, gets none)
]]
--@include "codes"
--@include "clock"
--@include "annotate"

--@keys
local what, once = ARGV[2], ARGV[3] == "1"
local now = nowMs(ARGV[1])
-- the entry's text up to its detail: {"w":…,"at":…
local head = '{"w":"' .. what .. '","at":' .. intText(now)
local recorded = 0
for i = 4, #ARGV, 2 do
  if annotateOne(keys.waits, ARGV[i], what, head, ARGV[i + 1], now, once) then
    recorded = recorded + 1
  end
end
return { C_OK, recorded }
