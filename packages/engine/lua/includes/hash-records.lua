--[[
  Records kept in hash fields. Records are JSON (cjson) with short field names, except
  the compact form of a plain waiting wait (wait-record); see src/records.ts.
]]

-- The record in a hash field decoded by `decode`, or nil.
local function loadField(hashKey, field, decode)
  local raw = redis.call("HGET", hashKey, field)
  if not raw then
    return nil
  end
  return decode(raw)
end

--@inline
local function loadJson(hashKey, field)
  return loadField(hashKey, field, cjson.decode)
end

--@inline
local function saveJson(hashKey, field, value)
  redis.call("HSET", hashKey, field, cjson.encode(value))
end
