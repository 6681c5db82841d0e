--[[
  The index key of an encoded match key: 4-character digests of the tenant, of
  (tenant, type) and of the match key, 12 characters, so that prefixes of 4, 8 or 12
  characters select a tenant, a type or a match key. Digests may collide, so every
  reader of an index checks the wait's own match key.
]]
--@include "parts"

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

-- 24 bits of SHA-1 as 4 base64url characters (src/keys.ts computes the same).
local function digest4(s)
  local n = tonumber(string.sub(redis.sha1hex(s), 1, 6), 16)
  local a, b, c, d = math.floor(n / 262144), math.floor(n / 4096) % 64, math.floor(n / 64) % 64, n % 64
  return string.sub(B64, a + 1, a + 1) .. string.sub(B64, b + 1, b + 1) .. string.sub(B64, c + 1, c + 1) .. string.sub(B64, d + 1, d + 1)
end

local indexKeys = {}
-- The 12-character index key of an encoded match key (memoized per call).
local function indexKey(mk)
  local ik = indexKeys[mk]
  if ik == nil then
    local t = skipParts(mk, 1)
    local tt = skipParts(mk, 1, t)
    ik = digest4(string.sub(mk, 1, t - 1)) .. digest4(string.sub(mk, 1, tt - 1)) .. digest4(mk)
    indexKeys[mk] = ik
  end
  return ik
end
