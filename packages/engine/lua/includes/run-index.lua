--[[
  The run index of a partition (KEYS runs) holds, per claimed run position,
  "<run position><wait tag><defHash>": the run position (run digest + position
  digest, fixed length, so prefix-free), the fixed-width tag of the wait's partition,
  and the hash of the wait's definition. src/formats/index-members.ts reads the same.
]]

-- The member of a run position, or nil.
local function runMember(runsKey, runPosition)
  return redis.call("ZRANGEBYLEX", runsKey, "[" .. runPosition, "(" .. runPosition .. "\255", "LIMIT", 0, 1)[1]
end

-- The wait tag (`width` characters) and the definition hash of a run position's member.
local function runMemberParts(member, runPosition, width)
  local rest = string.sub(member, #runPosition + 1)
  return string.sub(rest, 1, width), string.sub(rest, width + 1)
end

-- The member that claims a run position for a wait and its definition.
local function newRunMember(runPosition, wait, defHash)
  return runPosition .. wait .. defHash
end
