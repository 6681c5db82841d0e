--[[
  Length-prefixed parts ("<len>:<bytes>"): the encoding of match keys (tenant, type,
  correlation id) and event keys (tenant, producer, event id). A sequence of encoded
  keys needs no separator: each key is self-delimiting.
]]

-- Position just after the first n length-prefixed parts of s that start at `from`
-- (default 1).
local function skipParts(s, n, from)
  local pos = from or 1
  for _ = 1, n do
    local colon = string.find(s, ":", pos, true)
    local len = tonumber(string.sub(s, pos, colon - 1))
    pos = colon + 1 + len
  end
  return pos
end

-- Appends to `into` each encoded event key (three parts) of s, which holds them one
-- after the other; returns `into`.
local function splitEventKeys(s, into)
  local pos = 1
  while pos <= #s do
    local after = skipParts(s, 3, pos)
    into[#into + 1] = string.sub(s, pos, after - 1)
    pos = after
  end
  return into
end
