--[[
  claimRunPosition: first step of registration, in the partition of the RUN KEY
  (tenant, runId). Binds (tenant, runId, position) to one wait definition, so a
  re-registration names the same wait and another definition is refused.

  KEYS[1] runs      {p}:r  lex zset "<run position><wait><defHash>"

  ARGV[1] runPosition    run digest + position digest (fixed length, so prefix-free)
  ARGV[2] wait           what names the wait with the run position (its partition's
                         fixed-width tag)
  ARGV[3] defHash        hash of the definition (type, correlation id, timeout/deadline,
                         since), fixed length

  Returns
    { CREATED, wait }      claimed now
    { EXISTS, wait }       claimed before with the same definition
    { CONFLICT, wait }     claimed before with another definition: nothing changes
]]
--@include "codes"

--@keys
local runPosition, wait, defHash = ARGV[1], ARGV[2], ARGV[3]

local found = redis.call("ZRANGEBYLEX", keys.runs, "[" .. runPosition, "(" .. runPosition .. "\255", "LIMIT", 0, 1)
if found[1] then
  local rest = string.sub(found[1], #runPosition + 1)
  local existing, existingHash = string.sub(rest, 1, #wait), string.sub(rest, #wait + 1)
  if existingHash == defHash then
    return { C_EXISTS, existing }
  end
  return { C_CONFLICT, existing }
end
redis.call("ZADD", keys.runs, "0", runPosition .. wait .. defHash)
return { C_CREATED, wait }
