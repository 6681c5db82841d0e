--[[
  The claim of an event key (dedupEvents; ingest in one step: ingestEvents,
  claimAppendEvents), in the event key's own partition: its dedup record in the events hash,
  the expiry of the records one call wrote one "D:" member.
]]
--@include "codes"
--@include "packed"
--@include "clock"
--@include "event-record"
--@include "expiry"

-- The claim of `eventKey` with `record`, against its stored dedup record (`stored`, false:
-- none) and the claims made earlier in the call (`claimedNow`, by event key; a new claim is
-- added there): D_CREATED, D_PENDING (claimed before with the same record) or D_CONFLICT.
local function claimCode(eventKey, record, stored, claimedNow)
  local existing = stored or claimedNow[eventKey]
  if not existing then
    claimedNow[eventKey] = record
    return D_CREATED
  elseif dedupText(existing) == record then
    return D_PENDING
  end
  return D_CONFLICT
end

-- Writes a call's new claims of one partition: `writes` the field, record pairs of its
-- events hash, `claimed` their event keys, kept until `expiresAt`.
local function writeClaims(eventsKey, expiryKey, writes, claimed, expiresAt)
  if #claimed > 0 then
    redis.call("HSET", eventsKey, unpack(writes))
    scheduleExpiry(expiryKey, expiresAt, "D", table.concat(claimed))
  end
end

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
      local code = claimCode(eventKeys[n], records[n], stored[f], claimedNow)
      if code == D_CREATED then
        w[#w + 1] = fields[f]
        w[#w + 1] = records[n]
        c[#c + 1] = eventKeys[n]
      elseif code == D_CONFLICT then
        return false
      end
    end
    writes[p], claimed[p] = w, c
  end

  local expiresAt = intText(nowMs(nowArg) + tonumber(windowMs))
  for p, w in pairs(writes) do
    writeClaims(claimKeys[2 * p - 1], claimKeys[2 * p], w, claimed[p], expiresAt)
  end
  return true
end
