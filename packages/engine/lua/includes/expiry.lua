--[[
  The expiry zset of a partition: what to remove, scored by when it is due, as
  members "<kind>:<body>" (expireRecords reads them):
    w waitId          a settled wait
    e / d eventKey    an event / dedup record
    E / D eventKeys   the event / dedup records one ingest call wrote (event keys one
                      after the other)
    b eventKey        a buffered event's time in the inbox
    j matchKey        the refusals recorded for a match key
]]

--@inline
local function scheduleExpiry(expiryKey, score, kind, body)
  redis.call("ZADD", expiryKey, score, kind .. ":" .. body)
end

-- The kind and body of an expiry member.
local function expiryEntry(member)
  return string.sub(member, 1, 1), string.sub(member, 3)
end
