--[[
  timeoutWait: resolves a wait as timed out, by the event-time rule. It does so only
  if the wait is still `waiting`, now >= its deadline, and no event of its match key
  accepted at or before the deadline is still unprocessed (appended, not yet
  matched). Such an event would win: the caller retries shortly instead (BACKLOG).
  When more than SCAN_CAP unprocessed events of the partition were accepted at or
  before the deadline, the script does not look for its match key among them: it
  answers BACKLOG, the design's partition-wide rule (every entry accepted <= deadline
  processed first), so that a timeout costs Redis a bounded amount under any backlog.

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] inflight   {p}:if  zset "<mk><padded id><eventKey>" by accepted time (ms;
                             0 for entries written by versions before 2026-11-30)
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
    { BACKLOG, deadline }    an on-time event of its match key is still unprocessed, or
                             more than SCAN_CAP on-time events of the partition are
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
-- The unprocessed events accepted at or before the deadline: the in-flight entries
-- scored up to it (entries of earlier versions score 0: their padded id tells).
local SCAN_CAP = 100
local upTo = intText(deadline)
local onTime = redis.call("ZCOUNT", keys.inflight, "-inf", upTo)
if onTime > SCAN_CAP then
  return { C_BACKLOG, tostring(deadline) }
end
if onTime > 0 then
  local mk, latest = wait["mk"], padMs(deadline)
  local afterMk = #mk + 1
  for _, member in ipairs(redis.call("ZRANGE", keys.inflight, "-inf", upTo, "BYSCORE")) do
    -- (encoded match keys are self-delimiting: a member that starts with mk is of mk)
    if string.sub(member, 1, #mk) == mk and string.sub(member, afterMk, afterMk + 14) <= latest then
      return { C_BACKLOG, tostring(deadline) }
    end
  end
end

settleWait(keys, waitId, wait, "t", { k = "t", at = now, dl = deadline },
  { at = now, w = "resolved", k = "t", dl = deadline }, now, retentionMs)
return { C_RESOLVED, cjson.encode(wait) }
