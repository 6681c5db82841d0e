--[[
  deliverWaits: resolves the given waits of one partition by direct delivery, each
  only if still `waiting`, of the caller's tenant and not past its deadline (an
  expired wait is left to its timeout, never resurrected).

  KEYS[1] waits      {p}:w   hash waitId -> wait record
  KEYS[2] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[3] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[4] deadlines  {p}:dl  zset waitId by deadline
  KEYS[5] outbox     {p}:o   stream of resolutions
  KEYS[6] expiry     {p}:x   zset of records to remove

  ARGV[1] tenantPrefix   encoded tenant of the caller
  ARGV[2] payload        raw payload JSON or ""
  ARGV[3] retentionMs
  ARGV[4] now            "" = Redis TIME
  ARGV[5] outcome        "s" success, "f" failure
  ARGV[6] error          raw error JSON or "" (a failure's)
  ARGV[7] trace          "" or the delivery's trace context text (the outbox entries' t)
  ARGV[8..] waitIds

  Returns { OK, deliveredWaitIds }
  Appends: resolved history entries (kind deliver) and outbox entries.
]]
--@include "codes"
--@include "clock"
--@include "settle"

--@keys
local tenantPrefix, payload, retentionMs = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = nowMs(ARGV[4])

local delivered = {}
local outcome, err = ARGV[5], ARGV[6]
for i = 8, #ARGV do
  local waitId = ARGV[i]
  local wait = loadOwnWait(keys.waits, waitId, tenantPrefix)
  if wait ~= nil and wait["s"] == "w" and (wait["dl"] == nil or now <= wait["dl"]) then
    local resolution = { k = "d", at = now }
    local entry = { at = now, w = "resolved", k = "d" }
    if payload ~= "" then
      resolution["pl"] = payload
    end
    if outcome == "f" then
      resolution["o"] = "f"
      entry["o"] = "f"
    end
    if err ~= "" then
      resolution["er"] = err
    end
    settleWait(keys, waitId, wait, "r", resolution, entry, now, retentionMs, nil, ARGV[7])
    delivered[#delivered + 1] = waitId
  end
end
return { C_OK, delivered }
