--[[
  cancelWait: resolves a `waiting` wait as cancelled.

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] outbox     {p}:o   stream of resolutions
  KEYS[6] expiry     {p}:x   zset of records to remove

  ARGV[1] waitId
  ARGV[2] tenantPrefix  encoded tenant of the caller ("" = admin)
  ARGV[3] retentionMs
  ARGV[4] now           "" = Redis TIME
  ARGV[5] trace         "" or the cancel's trace context text (the outbox entry's t)

  Returns
    { RESOLVED, wait }      cancelled now
    { NOT_FOUND }           no such wait for this tenant
    { NOT_WAITING, wait }   settled already: nothing changes
  Appends: the resolved history entry and an outbox entry.
]]
--@include "codes"
--@include "clock"
--@include "settle"

--@keys
local waitId, tenantPrefix, retentionMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = nowMs(ARGV[4])

local wait = loadOwnWait(keys.waits, waitId, tenantPrefix)
if wait == nil then
  return { C_NOT_FOUND }
end
if wait["s"] ~= "w" then
  return { C_NOT_WAITING, cjson.encode(wait) }
end
local record = settleWait(keys, waitId, wait, "c", { k = "c", at = now }, { at = now, w = "resolved", k = "c" }, now, retentionMs, nil, ARGV[5])
return { C_RESOLVED, record }
