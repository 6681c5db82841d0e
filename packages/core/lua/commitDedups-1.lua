--[[
  commitDedups: third step of ingest, for the events of a batch whose EVENT KEY
  lies in this partition. Marks each dedup record `appended` and remembers where
  the event went, so a later send of the same event key answers `duplicate` with
  the original.

  KEYS[1] events    {p}:e  hash; field "d:<eventKey>"

  ARGV[1..] pairs   eventKey, streamId (the entry id = accepted time)

  Returns one code per event, in order: OK, or NOT_FOUND (no dedup record: expired)
]]
--@include "common"

local eventsKey = KEYS[1]

local replies = {}
for i = 1, #ARGV, 2 do
  local eventKey, streamId = ARGV[i], ARGV[i + 1]
  local field = "d:" .. eventKey
  local rec = loadJson(eventsKey, field)
  if rec == nil then
    replies[#replies + 1] = C_NOT_FOUND
  else
    if rec["s"] ~= "a" then
      rec["s"] = "a"
      rec["sid"] = streamId
      rec["at"] = idMs(streamId)
      saveJson(eventsKey, field, rec)
    end
    replies[#replies + 1] = C_OK
  end
end
return replies
