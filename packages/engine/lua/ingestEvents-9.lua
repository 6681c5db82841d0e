--[[
  ingestEvents: ingest in ONE step on a single Redis (`rendezvous start`, where it runs
  acceptEvents): dedupEvents' claims of the call's event keys, then acceptEvents
  (claimAppendEvents is the same for a process without a matcher). The
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
  ARGV[7] matchers     as acceptEvents
  ARGV[8] handoff      as acceptEvents
  ARGV[9] matchUpTo    as acceptEvents
  ARGV[10] windowMs    dedup window (dedupEvents)
  ARGV[11] dedup       per event, in the order of ARGV[3], two packed fields: the number
                       of its claims pair (1 = KEYS[10] and KEYS[11], ...) and its dedup
                       record (dedupEvents')
  ARGV[12..] traces    as acceptEvents' ARGV[10..]

  Returns acceptEvents' reply, or the number CONFLICT (nothing written).
]]
--@include "codes"
--@include "claims"
--@include "accept-events"

--@keys
local events = unpackRows(ARGV[3], 2)
if not claimEventKeys(keys.claims, events[1], ARGV[11], ARGV[10], ARGV[2]) then
  return C_CONFLICT
end
return acceptRows(keys, ARGV, events, ARGV[12])
