--[[
  annotateWaits: one timeline entry of the same kind on each of several waits of a
  partition (internal: any tenant), with no record in the reply: the dispatcher's
  continuation_dispatched for the waits of one step, the sweeper's sweeper_rescheduled,
  ingest's duplicate_ignored. annotateWait is the one-wait form whose reply is the wait.

  A JSON record (a settled wait, or one with a history) that has no entry of the kind
  yet, or is annotated without `once`, gets the entry appended as text after it
  (wait-record.lua: "\30" then the entry's JSON), so the record is neither decoded nor
  encoded; any other is decoded, checked and written whole, as annotateWait does.

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
--@include "wait-record"

--@keys
local what, once = ARGV[2], ARGV[3] == "1"
local now = nowMs(ARGV[1])
-- the entry's text up to its detail: {"w":…,"at":…
local head = '{"w":"' .. what .. '","at":' .. intText(now)
local recorded = 0
for i = 4, #ARGV, 2 do
  local waitId, detail = ARGV[i], ARGV[i + 1]
  local raw = redis.call("HGET", keys.waits, waitId)
  if raw then
    if string.byte(raw, 1) == 123 and not (once and string.find(raw, what, 1, true)) then
      -- no entry of this kind can be there (the kind's name is nowhere in the text)
      local text = detail == "{}" and head .. "}" or head .. "," .. string.sub(detail, 2)
      redis.call("HSET", keys.waits, waitId, raw .. "\30" .. text)
      recorded = recorded + 1
    else
      local wait = decodeWait(raw)
      if addHistoryEntry(wait, what, cjson.decode(detail), now, once) then
        saveWait(keys.waits, waitId, wait)
        recorded = recorded + 1
      end
    end
  end
end
return { C_OK, recorded }
