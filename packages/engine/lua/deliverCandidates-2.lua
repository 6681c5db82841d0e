--[[
  deliverCandidates: read-only. The waits of one partition that a direct delivery
  could resolve: `waiting`, of the given match-key prefix (tenant + type, and the
  correlation id when given), and not past their deadline.

  KEYS[1] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[2] waits      {p}:w   hash waitId -> wait record

  ARGV[1] indexPrefix  index-key prefix of (tenant, type) or of the match key
  ARGV[2] mkPrefix     encoded (tenant, type) or (tenant, type, correlationId): each
                       candidate's own match key must start with it (digests may collide)
  ARGV[3] idPrefix     "w<partition>."
  ARGV[4] limit        most index entries looked at
  ARGV[5] now          "" = Redis TIME
  ARGV[6] legacyPrefix the same prefix in the legacy layout (waits indexed before 2026-12-01), "" = none

  Returns { OK, waitIds }
]]
--@include "codes"
--@include "clock"
--@include "wait-record"
--@include "wait-index"

--@keys
local prefix, mkPrefix, idPrefix, limit = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = nowMs(ARGV[5])

local ids = {}
local function collect(p)
  local members = redis.call("ZRANGEBYLEX", keys.waiting, "[" .. p, "(" .. p .. "\255", "LIMIT", 0, limit)
  for _, member in ipairs(members) do
    local waitId = memberWaitId(idPrefix, member)
    local wait = loadWait(keys.waits, waitId)
    if wait ~= nil and hasMatchKeyPrefix(wait, mkPrefix) and wait["s"] == "w"
       and (wait["dl"] == nil or now <= wait["dl"]) then
      ids[#ids + 1] = waitId
    end
  end
end
collect(prefix)
if ARGV[6] ~= "" then
  collect(ARGV[6])
end
return { C_OK, ids }
