--[[
  The wait indexes of a partition (waiting, done) hold "<index key><wait id body 16>",
  all scores 0, so a prefix of the index key ranges over a tenant (exactly), a type or
  a match key. Members written before 2026-12-01 carry the 12-character legacy index
  key (docs/architecture.md, "Upgrading the wait indexes"): readers look under both,
  and a wait leaving an index whose current member is not there is removed under its
  legacy one, indexKey(mk, nil, true) .. waitIdBody(waitId).
]]
--@include "digests"
--@include "ids"

-- A wait's member in the waiting / done index.
--@inline
local function waitMember(wait, waitId)
  return indexKey(wait["mk"]) .. waitIdBody(waitId)
end

-- Every index member of a wait: one per match key (an any-of wait has several; its
-- record carries their index keys, `ixs`, computed at registration).
local function waitMembers(wait, waitId)
  local body = waitIdBody(waitId)
  local ix = wait["ixs"]
  if ix ~= nil then
    local out = {}
    for i, ik in ipairs(ix) do
      out[i] = ik .. body
    end
    return out
  end
  local out = { indexKey(wait["mk"]) .. body }
  for _, mk in ipairs(wait["mx"] or {}) do
    out[#out + 1] = indexKey(mk) .. body
  end
  return out
end

-- The wait id of an index member (of either layout), given the partition's "w<partition>." prefix.
--@inline
local function memberWaitId(idPrefix, member)
  return idPrefix .. string.sub(member, -16)
end
