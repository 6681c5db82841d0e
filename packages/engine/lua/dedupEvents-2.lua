--[[
  dedupEvents: first step of ingest, for the events of a batch whose EVENT KEY
  (tenant, producer, eventId) lies in this partition. Claims each event key for the
  dedup window, or refuses it when it was claimed before with other content.
  Whether a claimed key was already appended is for the append step to say (its
  event record exists), so no third step has to mark the claim. One HMGET reads
  every claim and one HSET writes the new ones, whatever the number of events.

  KEYS[1] events    {p}:e  hash; field "d:<eventKey>" holds the dedup record
  KEYS[2] expiry    {p}:x  zset; one member per call for the keys it claimed,
                           "D:" .. eventKey1 .. eventKey2 ... (encoded event keys are
                           self-delimiting), scored by their expiry time

  ARGV[1] windowMs       dedup window
  ARGV[2] now            "" = Redis TIME (tests may fix it)
  ARGV[3] events         per event, one after the other, two fields (nextField): its
                         encoded event key and its dedup record "<content hash>|<match
                         partition>" (the hash covers type, correlation id, occurredAt
                         and payload, so equal records mean equal content). One
                         argument: cheaper to send than two per event.

  Returns a string of one code digit per event, in order:
    CREATED     claimed now: append it next
    PENDING     claimed before (or earlier in this batch) with the same content:
                append it (append answers whether it was appended before)
    CONFLICT    claimed before with other content: nothing changes
]]
--@include "codes"
--@include "clock"
--@include "event-record"
--@include "claims"

--@keys
local windowMs = tonumber(ARGV[1])

local eventKeys, records, fields, stored = loadDedupRows(keys.events, ARGV[3])

local replies, writes, claimed, claimedNow = {}, {}, {}, {}
for n = 1, #fields do
  replies[n] = claimCode(eventKeys[n], records[n], stored[n], claimedNow)
  if replies[n] == D_CREATED then
    writes[#writes + 1] = fields[n]
    writes[#writes + 1] = records[n]
    claimed[#claimed + 1] = eventKeys[n]
  end
end
if #claimed > 0 then
  writeClaims(keys.events, keys.expiry, writes, claimed, intText(nowMs(ARGV[2]) + windowMs))
end
return table.concat(replies)
