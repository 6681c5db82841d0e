--[[
  claimRunPosition: first step of registration, in the partition of the RUN KEY
  (tenant, runId). Binds (tenant, runId, position) to one wait definition, so a
  re-registration names the same wait and another definition is refused.

  KEYS[1] runs      {p}:r  lex zset "<encoded (tenant, runId, position)><waitId>|<defHash>"

  ARGV[1] runPosition    encoded (tenant, runId, position) (prefix-free)
  ARGV[2] waitId
  ARGV[3] defHash        hash of the definition (type, correlation id, timeout/deadline, since)

  Returns
    { CREATED, waitId }    claimed now
    { EXISTS, waitId }     claimed before with the same definition
    { CONFLICT, waitId }   claimed before with another definition: nothing changes
]]
--@include "common"

local runsKey = KEYS[1]
local runPosition, waitId, defHash = ARGV[1], ARGV[2], ARGV[3]

local found = redis.call("ZRANGEBYLEX", runsKey, "[" .. runPosition, "(" .. runPosition .. "\255", "LIMIT", 0, 1)
if found[1] then
  local rest = string.sub(found[1], #runPosition + 1)
  local existingId, existingHash = string.match(rest, "^([^|]*)|(.*)$")
  if existingHash == defHash then
    return { C_EXISTS, existingId }
  end
  return { C_CONFLICT, existingId }
end
redis.call("ZADD", runsKey, 0, runPosition .. waitId .. "|" .. defHash)
return { C_CREATED, waitId }
