--[[
  deliverCandidates: read-only. The waits of one partition that a direct delivery
  could resolve: `waiting`, of the given match-key prefix (tenant + type, and the
  correlation id when given), and not past their deadline.

  KEYS[1] waiting    {p}:iw  lex zset "<mk><waitId>"
  KEYS[2] waits      {p}:w   hash waitId -> wait record

  ARGV[1] prefix     encoded (tenant, type) or (tenant, type, correlationId)
  ARGV[2] parts      how many encoded parts the match key has (3)
  ARGV[3] limit      most ids returned
  ARGV[4] now        "" = Redis TIME

  Returns { OK, waitIds }
]]
--@include "common"

local waitingKey, waitsKey = KEYS[1], KEYS[2]
local prefix, parts, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local now = nowMs(ARGV[4])

local ids = {}
local members = redis.call("ZRANGEBYLEX", waitingKey, "[" .. prefix, "(" .. prefix .. "\255", "LIMIT", 0, limit)
for _, member in ipairs(members) do
  local waitId = string.sub(member, skipParts(member, parts))
  local wait = loadWait(waitsKey, waitId)
  if wait ~= nil and wait["s"] == "w" and (wait["dl"] == nil or now <= wait["dl"]) then
    ids[#ids + 1] = waitId
  end
end
return { C_OK, ids }
