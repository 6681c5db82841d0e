--[[
  claimRunPosition: first step of registration, in the partition of the RUN KEY
  (tenant, runId). Binds (tenant, runId, position) to one wait definition, so a
  re-registration names the same wait and another definition is refused.

  KEYS[1] runs      {p}:r  lex zset "<run position><wait><defHash>" (includes/run-index.lua)

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
--@include "run-index"

--@keys
local runPosition, wait, defHash = ARGV[1], ARGV[2], ARGV[3]

local found = runMember(keys.runs, runPosition)
if found then
  local existing, existingHash = runMemberParts(found, runPosition, #wait)
  if existingHash == defHash then
    return { C_EXISTS, existing }
  end
  return { C_CONFLICT, existing }
end
redis.call("ZADD", keys.runs, "0", newRunMember(runPosition, wait, defHash))
return { C_CREATED, wait }
