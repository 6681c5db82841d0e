--[[
  ingestEvents: ingest in ONE step on a single Redis: dedupEvents' claims of the call's
  event keys, then acceptEvents (`rendezvous start`) or appendEvents (a process without
  a matcher: `matchers` ""). The
  claims lie in the partitions of the event keys, the append in the match key's: the
  one script that writes more than one partition, which a single Redis allows and a
  cluster does not (there ingest stays two steps; docs/architecture.md, "Ingest in one
  step"). Every claim is read before anything is written: when any event of the call
  was claimed before with other content, the call changes nothing and answers
  CONFLICT, and the caller takes its events the two-step way (which refuses that one).

  The match key's partition, as acceptEvents:
  KEYS[1] stream     {p}:s
  KEYS[2] events     {p}:e
  KEYS[3] expiry     {p}:x
  KEYS[4] waits      {p}:w
  KEYS[5] waiting    {p}:iw
  KEYS[6] done       {p}:id
  KEYS[7] deadlines  {p}:dl
  KEYS[8] inbox      {p}:ib
  KEYS[9] outbox     {p}:o
  KEYS[10..] claims  per event partition {e} of the call's events: its events hash {e}:e,
                     then its expiry zset {e}:x

  ARGV[1] keepMs       as acceptEvents
  ARGV[2] now          as acceptEvents (and the claims' time)
  ARGV[3] events       as acceptEvents
  ARGV[4] fanoutCap    as acceptEvents
  ARGV[5] retentionMs  as acceptEvents
  ARGV[6] idPrefix     as acceptEvents
  ARGV[7] matchers     as acceptEvents; "" = append only, appendEvents' step (a process
                       without a matcher: the split roles' api), ARGV[4..6, 8, 9] then ""
  ARGV[8] handoff      as acceptEvents
  ARGV[9] matchUpTo    as acceptEvents
  ARGV[10] windowMs    dedup window (dedupEvents)
  ARGV[11] dedup       per event, in the order of ARGV[3], two packed fields: the number
                       of its claims pair (1 = KEYS[10] and KEYS[11], ...) and its dedup
                       record (dedupEvents')
  ARGV[12..] traces    as acceptEvents' ARGV[10..]

  Returns acceptEvents' reply (appendEvents' when append only), or the number CONFLICT
  (nothing written).
]]
--@include "codes"
--@include "clock"
--@include "event-record"
--@include "expiry"
--@include "accept-events"

--@keys
local events = unpackRows(ARGV[3], 2)
local eventKeys = events[1]
local rows = unpackRows(ARGV[11], 2)
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
  local stored = redis.call("HMGET", keys.claims[2 * p - 1], unpack(fields))
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
      return C_CONFLICT
    end
  end
  writes[p], claimed[p] = w, c
end

local expiresAt = intText(nowMs(ARGV[2]) + tonumber(ARGV[10]))
for p, w in pairs(writes) do
  if #w > 0 then
    redis.call("HSET", keys.claims[2 * p - 1], unpack(w))
    scheduleExpiry(keys.claims[2 * p], expiresAt, "D", table.concat(claimed[p]))
  end
end

if ARGV[7] == "" then
  local sid, codes, existing = appendEventRows(keys, tonumber(ARGV[1]), ARGV[2], events, ARGV[12])
  return { sid, codes, existing }
end
return acceptRows(keys, ARGV, events, ARGV[12])
