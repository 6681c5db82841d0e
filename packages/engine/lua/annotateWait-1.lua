--[[
  annotateWait: changes what is not part of a wait's definition and records it on
  the timeline: attaching the external job id (job_attached), a continuation handed
  out (continuation_dispatched), a timeout job re-created by the sweeper
  (sweeper_rescheduled), a re-sent event (duplicate_ignored).

  KEYS[1] waits      {p}:w   hash waitId -> wait record

  ARGV[1] waitId
  ARGV[2] tenantPrefix   encoded tenant of the caller ("" = admin or internal)
  ARGV[3] what           history entry kind (one of the above)
  ARGV[4] detail         JSON object merged into the history entry; for
                         job_attached its `j` also becomes the wait's externalJobId
  ARGV[5] once           "1" = skip when the history already has an entry of this kind
                         with the same detail. The dispatcher sends its continuation_dispatched
                         (detail: queue, jobId) with it: one entry per job id, so a dispatcher
                         that re-handles an outbox entry after a crash (recorded, not yet
                         acknowledged) records nothing new. The check reads the history
                         the script decodes anyway, so waits written before carry no
                         marker and need none.
  ARGV[6] now            "" = Redis TIME

  Returns
    { OK, wait }
    { EXISTS, wait }       `once` and already recorded: nothing changes
    { NOT_FOUND }
]]
--@include "codes"
--@include "clock"
--@include "wait-record"

--@keys
local waitId, tenantPrefix, what, detail, once = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now = nowMs(ARGV[6])

local wait = loadOwnWait(keys.waits, waitId, tenantPrefix)
if wait == nil then
  return { C_NOT_FOUND }
end
local entry = cjson.decode(detail)
if not addHistoryEntry(wait, what, entry, now, once == "1") then
  return { C_EXISTS, cjson.encode(wait) }
end
if what == "job_attached" then
  wait["j"] = entry["j"]
end
-- (the reply is the stored text: one encode of the record, not two; a record with a
-- history is JSON, so it reads as before)
local record = encodeWait(wait)
redis.call("HSET", keys.waits, waitId, record)
return { C_OK, record }
