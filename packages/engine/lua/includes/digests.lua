--[[
  The index key of an encoded match key: the encoded tenant itself, then 4-character
  digests of (tenant, type) and of the match key, so that a prefix selects a tenant
  exactly (the encoding is prefix-free), and a type or a match key up to a digest
  collision, which every reader of an index checks against the wait's own match key.
  The legacy index key (members written before 2026-12-01) is 12 characters: the
  tenant's digest in place of the tenant.
]]
--@include "parts"

-- The last index key computed or given, and its encoded match key: a script mostly
-- handles one match key (no memo table built per call).
local lastMk, lastIk = nil, nil

-- The index key of an encoded match key, or with `legacy` its legacy (12-character)
-- index key. `known`, when not nil, is the index key as the caller has it already (an
-- event record carries it, computed at ingest): it is remembered, so a later call for
-- mk (the wait's index member) computes no digest.
local function indexKey(mk, known, legacy)
  if mk == lastMk and not legacy then
    return lastIk
  end
  local ik = known
  if ik == nil or legacy then
    -- (defined here, so that scripts whose index keys come computed do not build them)
    -- The base64url character code of a 6-bit value (A-Z a-z 0-9 - _).
    local function b64Code(v)
      if v < 26 then
        return v + 65
      elseif v < 52 then
        return v + 71
      elseif v < 62 then
        return v - 4
      end
      return v == 62 and 45 or 95
    end
    -- 24 bits of SHA-1 as 4 base64url characters (src/formats/index-members.ts computes
    -- the same). Arithmetic and one string.char: each string op or C call costs about
    -- 1,000 Redis instructions.
    local function digest4(s)
      local n = tonumber(string.sub(redis.sha1hex(s), 1, 6), 16)
      local d = n % 64
      n = (n - d) / 64
      local c = n % 64
      n = (n - c) / 64
      local b = n % 64
      return string.char(b64Code((n - b) / 64), b64Code(b), b64Code(c), b64Code(d))
    end
    local t = skipParts(mk, 1)
    if legacy then
      -- the tenant's digest in place of the encoded tenant
      return digest4(string.sub(mk, 1, t - 1)) .. string.sub(indexKey(mk, known), t)
    end
    local tt = skipParts(mk, 1, t)
    ik = string.sub(mk, 1, t - 1) .. digest4(string.sub(mk, 1, tt - 1)) .. digest4(mk)
  end
  lastMk, lastIk = mk, ik
  return ik
end
