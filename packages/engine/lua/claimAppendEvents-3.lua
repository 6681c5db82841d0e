--[[
  claimAppendEvents: ingest in ONE step on a single Redis for a process without a matcher
  (the split roles' api; `rendezvous start` with a failpoint armed or tracing):
  dedupEvents' claims of the call's event keys, in their own partitions, then appendEvents,
  in one script (docs/architecture.md, "Ingest in one step"). ingestEvents is the same with
  acceptEvents; this one carries none of the match's code.

  The match key's partition, as appendEvents:
  KEYS[1] stream     {p}:s
  KEYS[2] events     {p}:e
  KEYS[3] expiry     {p}:x
  KEYS[4..] claims   per event partition {e} of the call's events: its events hash {e}:e,
                     then its expiry zset {e}:x

  ARGV[1] keepMs       as appendEvents
  ARGV[2] now          as appendEvents (and the claims' time)
  ARGV[3] events       as appendEvents
  ARGV[4] windowMs     dedup window (dedupEvents)
  ARGV[5] dedup        as ingestEvents' ARGV[11]
  ARGV[6..] traces     as appendEvents' ARGV[4..]

  Returns appendEvents' reply, or the number CONFLICT (nothing written).
]]
--@include "codes"
--@include "claims"
--@include "append-events"

--@keys
local events = unpackRows(ARGV[3], 2)
if not claimEventKeys(keys.claims, events[1], ARGV[5], ARGV[4], ARGV[2]) then
  return C_CONFLICT
end
local sid, codes, existing = appendEventRows(keys, tonumber(ARGV[1]), ARGV[2], events, ARGV[6])
return { sid, codes, existing }
