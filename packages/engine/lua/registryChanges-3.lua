--[[
  registryChanges: what changed in the registry since a version, for a process that holds
  the registry at that version: the current version and the current value of every record
  field the changes after it touched, read at once. Read only.

  KEYS[1] meta       {<prefix>:reg}:m   hash: version
  KEYS[2] records    {<prefix>:reg}:r   hash "<kind>:<name>" -> record JSON
  KEYS[3] changelog  {<prefix>:reg}:c   stream, entry id "<version>-1", field "fields"

  ARGV[1] since      the version the caller holds
  ARGV[2] maxFields  past this many changed fields the caller reloads whole

  Returns
    { version, 1, field, value, field, value, ... }   complete: value "" = the field was deleted
    { version, 0 }                                    the changelog does not reach back to since + 1
                                                      (trimmed, or too many fields): reload whole
]]

--@keys
local since, maxFields = tonumber(ARGV[1]), tonumber(ARGV[2])

local version = tonumber(redis.call("HGET", keys.meta, "version") or "0")
if version == since then
  return { version, 1 }
end
if version < since then
  return { version, 0 }
end
local first = string.format("%d-1", since + 1)
local entries = redis.call("XRANGE", keys.changelog, first, "+")
if #entries == 0 or entries[1][1] ~= first then
  return { version, 0 }
end
local seen, fields = {}, {}
for _, entry in ipairs(entries) do
  for field in string.gmatch(entry[2][2], "[^\n]+") do
    if not seen[field] then
      seen[field] = true
      fields[#fields + 1] = field
    end
  end
  if #fields > maxFields then
    return { version, 0 }
  end
end
local out = { version, 1 }
for _, field in ipairs(fields) do
  out[#out + 1] = field
  out[#out + 1] = redis.call("HGET", keys.records, field) or ""
end
return out
