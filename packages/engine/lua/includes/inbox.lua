--[[
  The inbox of a partition: its buffered events, as members
  "<encoded match key><padded stream id><eventKey>", all scores 0. An encoded match
  key (length-prefixed parts) is prefix-free, so "[mk" .. "(mk\255" ranges over
  exactly the members of that match key, earliest accepted first.
]]
--@include "ids"

-- The inbox member of an event of match key mk accepted as stream entry sid.
--@inline
local function inboxMember(mk, sid, eventKey)
  return mk .. padId(sid) .. eventKey
end

-- The first `limit` inbox members of match key mk accepted at or after sinceMs.
local function bufferedSince(inboxKey, mk, sinceMs, limit)
  return redis.call("ZRANGEBYLEX", inboxKey, "[" .. mk .. padMs(sinceMs), "(" .. mk .. "\255", "LIMIT", 0, limit)
end

-- The event key of an inbox member of match key mk (after its 26-character padded id).
--@inline
local function inboxEventKey(member, mk)
  return string.sub(member, #mk + 27)
end
