--[[
  Wait records, in the waits hash under their wait id. States: w waiting, r resolved,
  t timed_out, c cancelled. A record is JSON, except a wait that is `waiting` with
  nothing but its registration fields, which is kept as compact text (about 35 bytes
  smaller: most waits are such): the encoded parts (mk, r, p) then "<ca>,<dl>,<sn>"
  (dl and sn may be empty). Both forms are read here and by src/records.ts.
]]
--@include "clock"
--@include "parts"
--@include "hash-records"

local function decodeWait(raw)
  if string.byte(raw, 1) == 123 then
    return cjson.decode(raw)
  end
  local parts, pos = {}, 1
  for i = 1, 3 do
    local after = skipParts(raw, 1, pos)
    parts[i] = string.sub(raw, string.find(raw, ":", pos, true) + 1, after - 1)
    pos = after
  end
  local ca, dl, sn = string.match(raw, "^(%d+),(%d*),(%d*)$", pos)
  return { s = "w", mk = parts[1], r = parts[2], p = parts[3], ca = tonumber(ca), dl = tonumber(dl), sn = tonumber(sn) }
end

local function encodeWait(wait)
  if wait["s"] == "w" then
    -- (the fields of the compact form compared one by one: a table of them would be
    -- built on every call of every script that includes this)
    for k in pairs(wait) do
      if k ~= "mk" and k ~= "r" and k ~= "p" and k ~= "s" and k ~= "ca" and k ~= "dl" and k ~= "sn" then
        return cjson.encode(wait)
      end
    end
    local mk, r, p = wait["mk"], wait["r"], wait["p"]
    return #mk .. ":" .. mk .. #r .. ":" .. r .. #p .. ":" .. p .. intText(wait["ca"]) .. "," .. intText(wait["dl"]) .. "," .. intText(wait["sn"])
  end
  return cjson.encode(wait)
end

--@inline
local function loadWait(waitsKey, waitId)
  return loadField(waitsKey, waitId, decodeWait)
end

--@inline
local function saveWait(waitsKey, waitId, wait)
  redis.call("HSET", waitsKey, waitId, encodeWait(wait))
end

-- Appends an entry to the wait's history (its timeline).
local function pushHistory(wait, entry)
  local h = wait["h"]
  if h == nil then
    h = {}
    wait["h"] = h
  end
  h[#h + 1] = entry
end

-- Does the wait belong to the tenant? tenantPrefix is the encoded tenant ("" = any, admin).
--@inline
local function ownedBy(wait, tenantPrefix)
  return tenantPrefix == "" or string.sub(wait["mk"], 1, #tenantPrefix) == tenantPrefix
end

-- The wait record, when it exists and belongs to the tenant.
local function loadOwnWait(waitsKey, waitId, tenantPrefix)
  local wait = loadWait(waitsKey, waitId)
  if wait == nil or not ownedBy(wait, tenantPrefix) then
    return nil
  end
  return wait
end
