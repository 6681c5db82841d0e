--[[
  timeoutWait: resolves a wait as timed out, by the event-time rule. It does so only
  if the wait is still `waiting`, now >= its deadline, and no event of its match key
  accepted at or before the deadline is still unprocessed (appended, not yet
  matched). Such an event would win: the caller retries shortly instead (BACKLOG).

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] inflight   {p}:if  lex zset "<mk><padded id><eventKey>"
  KEYS[6] outbox     {p}:o   stream of resolutions
  KEYS[7] expiry     {p}:x   zset of records to remove

  ARGV[1] waitId
  ARGV[2] retentionMs
  ARGV[3] now          "" = Redis TIME

  Returns
    { RESOLVED, wait }       timed out now
    { NOT_FOUND }            no such wait
    { NOT_WAITING, wait }    settled already: nothing changes
    { NOT_DUE, deadline }    no deadline (""), or not reached yet
    { BACKLOG, deadline }    an on-time event of its match key is still unprocessed
  Appends: the resolved history entry and an outbox entry when it times out.
]]
--@include "common"

local keys = {
  waits = KEYS[1], waiting = KEYS[2], done = KEYS[3], deadlines = KEYS[4],
  inflight = KEYS[5], outbox = KEYS[6], expiry = KEYS[7],
}
local waitId, retentionMs = ARGV[1], tonumber(ARGV[2])
local now = nowMs(ARGV[3])

local raw = redis.call("HGET", keys.waits, waitId)
if not raw then
  return { C_NOT_FOUND }
end
local wait = decodeWait(raw)
if wait["s"] ~= "w" then
  return { C_NOT_WAITING, raw }
end
local deadline = wait["dl"]
if deadline == nil then
  return { C_NOT_DUE, "" }
end
if now < deadline then
  return { C_NOT_DUE, tostring(deadline) }
end
local mk = wait["mk"]
local onTime = redis.call("ZRANGEBYLEX", keys.inflight, "[" .. mk, "(" .. mk .. padMs(deadline + 1), "LIMIT", 0, 1)
if onTime[1] then
  return { C_BACKLOG, tostring(deadline) }
end

settleWait(keys, waitId, wait, "t", { k = "t", at = now, dl = deadline },
  { at = now, w = "resolved", k = "t", dl = deadline }, now, retentionMs)
return { C_RESOLVED, cjson.encode(wait) }
