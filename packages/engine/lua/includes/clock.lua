--[[
  Times are integer milliseconds on the Redis clock.
]]

-- The clock is Redis TIME; a non-empty override (tests only) replaces it.
local function nowMs(override)
  if override and override ~= "" then
    return tonumber(override)
  end
  -- (arithmetic converts TIME's two strings: no tonumber or math.floor calls, each a C
  -- call of about 1,000 Redis instructions)
  local t = redis.call("TIME")
  local us = t[2] + 0
  return t[1] * 1000 + (us - us % 1000) / 1000
end

-- A time as decimal digits ("" for none): the text form of scores and record fields.
local function intText(n)
  if n == nil then
    return ""
  end
  return string.format("%d", n)
end
