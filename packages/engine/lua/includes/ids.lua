--[[
  Fixed-width forms of stream ids and times, so that lexical order is time order,
  and the parts of a wait id ("w<partition>.<body>").
]]

-- A stream id as "%015d-%010d" of its two numbers, built without number conversions.
local function padId(sid)
  local dash = string.find(sid, "-", 1, true)
  local ms, seq = string.sub(sid, 1, dash - 1), string.sub(sid, dash + 1)
  return string.rep("0", 15 - #ms) .. ms .. "-" .. string.rep("0", 10 - #seq) .. seq
end

-- A time, comparable with padId() output.
local function padMs(ms)
  return string.format("%015d", ms)
end

-- The body of a wait id: what follows "w<partition>.".
--@inline
local function waitIdBody(waitId)
  return string.sub(waitId, string.find(waitId, ".", 1, true) + 1)
end
