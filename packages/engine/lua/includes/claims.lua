--[[
  The claims of ingest in one step (ingestEvents, claimAppendEvents): dedupEvents' claim of
  each event key, made in the event key's own partition, for a call of a single Redis whose
  claims pairs (events hash, expiry zset per event partition) are the script's rest of KEYS.
]]
--@include "packed"
--@include "clock"
--@include "event-record"
--@include "expiry"

-- Claims the event keys `eventKeys` (the call's events, in order) with the packed rows of
-- `dedupArg` (per event: the number of its claims pair in `claimKeys`, its dedup record) for
-- `windowMs` from `nowArg` ("" = Redis TIME). Every claim is read before anything is written:
-- returns false, having written nothing, when an event key was claimed with other content.
local function claimEventKeys(claimKeys, eventKeys, dedupArg, windowMs, nowArg)
  local rows = unpackRows(dedupArg, 2)
  local pairOf, records = rows[1], rows[2]

  -- each claims pair's fields, read with one HMGET a pair
  local fieldsOf, eventsOf = {}, {}
  for n = 1, #eventKeys do
    local p = pairOf[n] + 0
    local fields = fieldsOf[p]
    if not fields then
      fields, eventsOf[p] = {}, {}
      fieldsOf[p] = fields
    end
    fields[#fields + 1] = "d:" .. eventKeys[n]
    eventsOf[p][#fields] = n
  end

  local writes, claimed, claimedNow = {}, {}, {}
  for p, fields in pairs(fieldsOf) do
    local stored = redis.call("HMGET", claimKeys[2 * p - 1], unpack(fields))
    local w, c = {}, {}
    for f = 1, #fields do
      local n = eventsOf[p][f]
      local eventKey, record = eventKeys[n], records[n]
      local existing = stored[f] or claimedNow[eventKey]
      if not existing then
        claimedNow[eventKey] = record
        w[#w + 1] = fields[f]
        w[#w + 1] = record
        c[#c + 1] = eventKey
      elseif dedupText(existing) ~= record then
        return false
      end
    end
    writes[p], claimed[p] = w, c
  end

  local expiresAt = intText(nowMs(nowArg) + tonumber(windowMs))
  for p, w in pairs(writes) do
    if #w > 0 then
      redis.call("HSET", claimKeys[2 * p - 1], unpack(w))
      scheduleExpiry(claimKeys[2 * p], expiresAt, "D", table.concat(claimed[p]))
    end
  end
  return true
end
