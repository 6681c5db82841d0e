--[[
  A consumer group of a stream, as XINFO GROUPS describes it.
]]

-- The group's last-delivered id, its count of pending (delivered, not acknowledged)
-- entries and whether it exists; "0-0", 0 and false when it does not.
local function groupPosition(streamKey, group)
  local lastDelivered, pending, found = "0-0", 0, false
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
      lastDelivered, pending, found = last, count, true
    end
  end
  return lastDelivered, pending, found
end

-- The group as XINFO GROUPS describes it: { lastDelivered, pending, entriesRead, lag }
-- (entriesRead and lag nil where Redis cannot tell them), or nil when it does not exist.
local function groupState(streamKey, group)
  local groups = redis.call("XINFO", "GROUPS", streamKey)
  for g = 1, #groups do
    local info = groups[g]
    local state, name = {}, nil
    for i = 1, #info, 2 do
      local field, value = info[i], info[i + 1]
      if field == "name" then
        name = value
      elseif field == "last-delivered-id" then
        state.lastDelivered = value
      elseif field == "pending" then
        state.pending = value
      elseif field == "entries-read" and type(value) == "number" then
        state.entriesRead = value
      elseif field == "lag" and type(value) == "number" then
        state.lag = value
      end
    end
    if name == group then
      return state
    end
  end
  return nil
end
