--[[
  A consumer group of a stream, as XINFO GROUPS describes it.
]]

-- The group's last-delivered id and its count of pending (delivered, not acknowledged)
-- entries; "0-0" and 0 when the group does not exist.
local function groupPosition(streamKey, group)
  local lastDelivered, pending = "0-0", 0
  local groups = redis.call("XINFO", "GROUPS", streamKey)
  for g = 1, #groups do
    local info = groups[g]
    local name, last, count
    for i = 1, #info, 2 do
      if info[i] == "name" then
        name = info[i + 1]
      elseif info[i] == "last-delivered-id" then
        last = info[i + 1]
      elseif info[i] == "pending" then
        count = info[i + 1]
      end
    end
    if name == group then
      lastDelivered, pending = last, count
    end
  end
  return lastDelivered, pending
end
