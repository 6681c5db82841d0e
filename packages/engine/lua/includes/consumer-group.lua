--[[
  A consumer group of a stream, as XINFO GROUPS describes it.
]]

-- The group as XINFO GROUPS describes it: { lastDelivered, pending, entriesRead, lag }
-- (entriesRead and lag nil where Redis cannot tell them), or nil when it does not exist,
-- nor its stream (redis.pcall: no EXISTS call first; XINFO of a missing key is an error).
local function groupState(streamKey, group)
  local groups = redis.pcall("XINFO", "GROUPS", streamKey)
  if groups.err then
    return nil
  end
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

-- A "<group> <consumer>" argument as its two parts.
local function groupAndConsumer(pair)
  local space = string.find(pair, " ", 1, true)
  return string.sub(pair, 1, space - 1), string.sub(pair, space + 1)
end

-- Delivers up to `count` undelivered entries of the stream to the consumer of
-- `pair` ("<group> <consumer>") and returns them as XREADGROUP gives them ({id, {field,
-- value, ...}}, ...), or nil for none. A group that does not exist (yet) delivers none:
-- the entries wait for its first read (redis.pcall: the caller's writes stand).
local function deliverTo(streamKey, pair, count)
  local group, consumer = groupAndConsumer(pair)
  local read = redis.pcall("XREADGROUP", "GROUP", group, consumer, "COUNT", count, "STREAMS", streamKey, ">")
  if type(read) == "table" and read[1] then
    return read[1][2]
  end
  return nil
end
