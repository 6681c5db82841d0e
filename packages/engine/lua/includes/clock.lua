--[[
  Times are integer milliseconds on the Redis clock.
]]

-- The clock is Redis TIME; a non-empty override (tests only) replaces it.
local function nowMs(override)
  if override and override ~= "" then
    return tonumber(override)
  end
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A time as decimal digits ("" for none): the text form of scores and record fields.
local function intText(n)
  if n == nil then
    return ""
  end
  return string.format("%d", n)
end
