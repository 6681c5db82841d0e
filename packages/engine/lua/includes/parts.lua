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

-- Where the first three length-prefixed parts of s lie: each one's first and last byte
-- (a match key's tenant, type and correlation id; wait-record.lua's decodeWait writes the
-- same out for a compact record's mk, r and p).
-- Lengths converted by arithmetic: every C call costs about 1,000 Redis instructions.
local function threeParts(s)
  local find, sub = string.find, string.sub
  local c1 = find(s, ":", 1, true)
  local e1 = c1 + sub(s, 1, c1 - 1)
  local c2 = find(s, ":", e1 + 1, true)
  local e2 = c2 + sub(s, e1 + 1, c2 - 1)
  local c3 = find(s, ":", e2 + 1, true)
  return c1 + 1, e1, c2 + 1, e2, c3 + 1, c3 + sub(s, e2 + 1, c3 - 1)
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
