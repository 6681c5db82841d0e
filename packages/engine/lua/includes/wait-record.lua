--[[
  Wait records, in the waits hash under their wait id. States: w waiting, r resolved,
  t timed_out, c cancelled. A record is JSON, except a wait that is `waiting` with
  nothing but its registration fields, which is kept as compact text (about 35 bytes
  smaller: most waits are such): the encoded parts (mk, r, p) then "<ca>,<dl>,<sn>"
  (dl and sn may be empty). A JSON record may be followed by timeline entries appended
  as text (annotateWaits: no decode and encode of the whole record), each "\30" (ASCII
  record separator, which JSON text never holds unescaped) then the entry's JSON; they
  are the last entries of its history, and the next encode writes them into `h`.
  Both forms are read here and by src/formats/wait-record.ts.
  A shaped wait (any-of, count, failure types) is always JSON: mx = the match keys of
  its other types, ixs = the index keys of all its match keys (mk first; any-of only),
  n = count, fk = the match keys of its failure types, col = the events collected so far
  (event refs with pl and x, the 1-based number of their match key).
]]
--@include "clock"
--@include "parts"
--@include "hash-records"

local function decodeWait(raw)
  if string.byte(raw, 1) == 123 then
    local find, sub = string.find, string.sub
    local at = find(raw, "\30", 1, true)
    if at == nil then
      return cjson.decode(raw)
    end
    -- entries appended as text: the history's last ones
    local wait = cjson.decode(sub(raw, 1, at - 1))
    local h = wait["h"] or {}
    wait["h"] = h
    while at ~= nil do
      local next = find(raw, "\30", at + 1, true)
      h[#h + 1] = cjson.decode(sub(raw, at + 1, (next or 0) - 1))
      at = next
    end
    return wait
  end
  -- three length-prefixed parts (parts.lua threeParts, written out: every helper a script
  -- includes is a closure made on each of its calls, and every script decodes waits), then
  -- "<ca>,<dl>,<sn>"; lengths and times converted by arithmetic: every C call costs about
  -- 1,000 Redis instructions
  local find, sub = string.find, string.sub
  local c1 = find(raw, ":", 1, true)
  local e1 = c1 + sub(raw, 1, c1 - 1)
  local c2 = find(raw, ":", e1 + 1, true)
  local e2 = c2 + sub(raw, e1 + 1, c2 - 1)
  local c3 = find(raw, ":", e2 + 1, true)
  local e3 = c3 + sub(raw, e2 + 1, c3 - 1)
  local ca, dl, sn = string.match(raw, "^(%d+),(%d*),(%d*)$", e3 + 1)
  return {
    s = "w", mk = sub(raw, c1 + 1, e1), r = sub(raw, c2 + 1, e2), p = sub(raw, c3 + 1, e3), ca = ca + 0,
    dl = dl ~= "" and dl + 0 or nil, sn = sn ~= "" and sn + 0 or nil,
  }
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

-- Deep equality of decoded JSON values (key order of Lua tables is not stable).
local function sameValue(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then
    return a == b
  end
  for k, v in pairs(a) do
    if not sameValue(v, b[k]) then
      return false
    end
  end
  for k in pairs(b) do
    if a[k] == nil then
      return false
    end
  end
  return true
end

-- Has the wait's history an entry of kind `what` carrying every field of `detail`?
local function hasHistoryEntry(wait, what, detail)
  for _, h in ipairs(wait["h"] or {}) do
    if h["w"] == what then
      local equal = true
      for k, v in pairs(detail) do
        if not sameValue(h[k], v) then
          equal = false
        end
      end
      if equal then
        return true
      end
    end
  end
  return false
end

-- Pushes `entry` (a decoded detail) onto the history as an entry of kind `what` at
-- `now`, unless `once` and the history has such an entry already; whether it did.
local function addHistoryEntry(wait, what, entry, now, once)
  if once and hasHistoryEntry(wait, what, entry) then
    return false
  end
  entry["at"] = now
  entry["w"] = what
  pushHistory(wait, entry)
  return true
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

-- The number of `mk` among the wait's match keys (1: its own; 2.. its other types'), or nil.
local function matchKeyNumber(wait, mk)
  if wait["mk"] == mk then
    return 1
  end
  local mx = wait["mx"]
  if mx ~= nil then
    for i, other in ipairs(mx) do
      if other == mk then
        return i + 1
      end
    end
  end
  return nil
end

-- Is one of the wait's match keys prefixed by `prefix` (an encoded (tenant, type) or match key)?
local function hasMatchKeyPrefix(wait, prefix)
  if string.sub(wait["mk"], 1, #prefix) == prefix then
    return true
  end
  for _, other in ipairs(wait["mx"] or {}) do
    if string.sub(other, 1, #prefix) == prefix then
      return true
    end
  end
  return false
end

-- Does the wait take events other than one by one (any-of, count, failure types)?
--@inline
local function isShaped(wait)
  return wait["mx"] ~= nil or wait["n"] ~= nil or wait["fk"] ~= nil
end
