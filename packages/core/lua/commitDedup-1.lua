--[[
  commitDedup: third step of ingest, in the partition of the EVENT KEY. Marks the
  dedup record `appended` and remembers where the event went, so a later send of
  the same event key answers `duplicate` with the original.

  KEYS[1] events    {p}:e  hash; field "d:<eventKey>"

  ARGV[1] eventKey
  ARGV[2] streamId       id of the stream entry (accepted time)

  Returns
    { OK, record }      the committed record
    { NOT_FOUND }       no dedup record (expired): nothing changes
]]
--@include "common"

local eventsKey = KEYS[1]
local eventKey, streamId = ARGV[1], ARGV[2]

local field = "d:" .. eventKey
local rec = loadJson(eventsKey, field)
if rec == nil then
  return { C_NOT_FOUND }
end
if rec["s"] ~= "a" then
  rec["s"] = "a"
  rec["sid"] = streamId
  rec["at"] = idMs(streamId)
  saveJson(eventsKey, field, rec)
end
return { C_OK, cjson.encode(rec) }
