--[[
  completeByToken: completes or fails a `waiting` wait through its completion token.
  Single use: the first call that commits settles the wait; every later one finds it
  settled. A call past the deadline is refused and the wait is left to its timeout.

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] outbox     {p}:o   stream of resolutions
  KEYS[6] expiry     {p}:x   zset of records to remove

  ARGV[1] waitId       the wait the token names
  ARGV[2] tokenHash    hash of the presented token (formats/completion-token.ts)
  ARGV[3] outcome      "s" success, "f" failure
  ARGV[4] payload      raw payload JSON or ""
  ARGV[5] error        raw error JSON or "" (a failure's)
  ARGV[6] retentionMs
  ARGV[7] now          "" = Redis TIME

  Returns
    { RESOLVED, wait }      resolved now (kind token)
    { NOT_FOUND }           no such wait, or the token is not its current one
    { NOT_WAITING, wait }   settled already: nothing changes
    { LATE, deadline }      past the deadline: nothing changes
  Appends: the resolved history entry (kind token) and an outbox entry.
]]
--@include "codes"
--@include "clock"
--@include "settle"
--@include "tokens"

--@keys
local waitId, tokenHash, outcome = ARGV[1], ARGV[2], ARGV[3]
local payload, err, retentionMs = ARGV[4], ARGV[5], tonumber(ARGV[6])
local now = nowMs(ARGV[7])

local wait = loadWaitFor(keys.waits, waitId, "", tokenHash)
if wait == nil then
  return { C_NOT_FOUND }
end
if wait["s"] ~= "w" then
  return { C_NOT_WAITING, encodeWait(wait) }
end
if wait["dl"] ~= nil and now > wait["dl"] then
  return { C_LATE, intText(wait["dl"]) }
end
local resolution = { k = "k", at = now }
local entry = { at = now, w = "resolved", k = "k" }
if outcome == "f" then
  resolution["o"] = "f"
  entry["o"] = "f"
end
if payload ~= "" then
  resolution["pl"] = payload
end
if err ~= "" then
  resolution["er"] = err
end
local record = settleWait(keys, waitId, wait, "r", resolution, entry, now, retentionMs)
return { C_RESOLVED, record }
