--[[
  One timeline entry on a wait (annotateWaits; the continuation jobs the accept adds,
  continuation-jobs.lua). A JSON record (a settled wait, or one with a history) that has
  no entry of the kind yet, or is annotated without `once`, gets the entry appended as
  text after it (wait-record.lua: "\30" then the entry's JSON), so the record is neither
  decoded nor encoded; any other is decoded, checked and written whole, as annotateWait
  does.
]]
--@include "wait-record"

-- The entry of kind `what` at `now` with `detail` (a JSON object's text; neither `w` nor
-- `at` among its fields) on wait `waitId` of the waits hash `waitsKey`; `head` is the
-- entry's text up to its detail ({"w":…,"at":…). With `once`, a wait whose history has
-- an entry of this kind with the same detail gets none. Whether it got the entry (a wait
-- that does not exist gets none).
local function annotateOne(waitsKey, waitId, what, head, detail, now, once)
  local raw = redis.call("HGET", waitsKey, waitId)
  if not raw then
    return false
  end
  if string.byte(raw, 1) == 123 and not (once and string.find(raw, what, 1, true)) then
    -- no entry of this kind can be there (the kind's name is nowhere in the text)
    local text = detail == "{}" and head .. "}" or head .. "," .. string.sub(detail, 2)
    redis.call("HSET", waitsKey, waitId, raw .. "\30" .. text)
    return true
  end
  local wait = decodeWait(raw)
  if addHistoryEntry(wait, what, cjson.decode(detail), now, once) then
    saveWait(waitsKey, waitId, wait)
    return true
  end
  return false
end
