--[[
  rotateToken: gives a `waiting` wait a new completion token; the previous one (if
  any) is invalid from then on. Only the token's hash is passed and stored.

  KEYS[1] waits      {p}:w   hash waitId -> wait record

  ARGV[1] waitId
  ARGV[2] tenantPrefix  encoded tenant of the caller ("" = admin)
  ARGV[3] tokenHash     hash of the new token (formats/completion-token.ts)
  ARGV[4] now           "" = Redis TIME

  Returns
    { OK, wait }            the record with its new token
    { NOT_FOUND }           no such wait for this tenant
    { NOT_WAITING, wait }   settled: nothing changes
  Appends: a token_issued history entry.
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "tokens"

--@keys
local waitId, tenantPrefix, tokenHash = ARGV[1], ARGV[2], ARGV[3]
local now = nowMs(ARGV[4])

local wait = loadOwnWait(keys.waits, waitId, tenantPrefix)
if wait == nil then
  return { C_NOT_FOUND }
end
if wait["s"] ~= "w" then
  return { C_NOT_WAITING, encodeWait(wait) }
end
wait["tk"] = tokenHash
wait["ti"] = now
pushHistory(wait, { at = now, w = "token_issued" })
local record = encodeWait(wait)
redis.call("HSET", keys.waits, waitId, record)
return { C_OK, record }
