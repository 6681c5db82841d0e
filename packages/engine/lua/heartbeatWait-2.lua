--[[
  heartbeatWait: a heartbeat moves a `waiting` wait's deadline to now + heartbeatMs.
  Accepted only at or before the deadline in force (a later one is late, even while
  the timeout has not committed yet), so a timeout, which commits only at or after the
  deadline, and a heartbeat never both win. The deadline index follows; the scheduler
  finds the wait not due at the old deadline.

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] deadlines  {p}:dl  zset waitId by deadline

  ARGV[1] waitId
  ARGV[2] tenantPrefix  encoded tenant of the caller ("" = admin or token)
  ARGV[3] tokenHash     hash of the presented token (formats/completion-token.ts), "" for a host call
  ARGV[4] now           "" = Redis TIME

  Returns
    { OK, wait }            accepted: the record with its new deadline
    { NOT_FOUND }           no such wait for this caller (or the token is not its current one)
    { NOT_WAITING, wait }   settled: nothing changes
    { LATE, deadline }      past the deadline in force: nothing changes
    { NO_HEARTBEAT }        registered without heartbeatMs: nothing changes
  Appends: a heartbeat history entry (the first HEARTBEATS_KEPT of a wait).
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "tokens"

--@keys
local waitId, tenantPrefix, tokenHash = ARGV[1], ARGV[2], ARGV[3]
local now = nowMs(ARGV[4])

local wait = loadWaitFor(keys.waits, waitId, tenantPrefix, tokenHash)
if wait == nil then
  return { C_NOT_FOUND }
end
if wait["s"] ~= "w" then
  return { C_NOT_WAITING, encodeWait(wait) }
end
local hb = wait["hb"]
if hb == nil then
  return { C_NO_HEARTBEAT }
end
if wait["dl"] ~= nil and now > wait["dl"] then
  return { C_LATE, intText(wait["dl"]) }
end
local deadline = now + hb
if wait["d0"] == nil then
  wait["d0"] = wait["dl"] -- the registration's deadline, for its timeline entry
end
wait["dl"] = deadline
local count = (wait["hbn"] or 0) + 1
wait["hbn"] = count
wait["hbl"] = now
if count <= HEARTBEATS_KEPT then
  pushHistory(wait, { at = now, w = "heartbeat", dl = deadline, by = tokenHash ~= "" and "token" or "host" })
end
local record = encodeWait(wait)
redis.call("HSET", keys.waits, waitId, record)
redis.call("ZADD", keys.deadlines, intText(deadline), waitId)
return { C_OK, record }
