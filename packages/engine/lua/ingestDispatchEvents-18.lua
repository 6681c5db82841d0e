--[[
  ingestDispatchEvents: ingestEvents (claims, append, match in one step on a single
  Redis) that also adds the continuation jobs of the waits it resolves, in place of their
  outbox entries (continuation-jobs.lua): the resolution and its job in one step, with no
  round trip of the dispatcher's between them (docs/architecture.md, "Continuations added
  in the accept"). `rendezvous start` only, not tracing, no failpoint armed, for a tenant
  whose continuations all go to its own queue (no webhook, no continuation groups). The
  script's text is loaded with BullMQ's addStandardJob put before it as the local function
  `addOne(KEYS, ARGV)` (packages/workers/src/add-one.ts): without it, it is never run.
  On a single Redis, one call takes a step's events of several partitions (the first's as
  ingestEvents' KEYS and ARGV, the others' in ARGV[16..]): each partition's accept is the
  same as in a call of its own, and the call's fixed cost is paid once for all of them
  (docs/architecture.md, "Several partitions in one call").

  KEYS[1] stream     {p}:s
  KEYS[2] events     {p}:e
  KEYS[3] expiry     {p}:x
  KEYS[4] waits      {p}:w
  KEYS[5] waiting    {p}:iw
  KEYS[6] done       {p}:id
  KEYS[7] deadlines  {p}:dl
  KEYS[8] inbox      {p}:ib
  KEYS[9] outbox     {p}:o
  KEYS[10] jobWait       the queue's keys, in the order of BullMQ's addStandardJob:
  KEYS[11] jobPaused     wait, paused, meta, id, completed, delayed, active, events,
  KEYS[12] jobMeta       marker
  KEYS[13] jobId
  KEYS[14] jobCompleted
  KEYS[15] jobDelayed
  KEYS[16] jobActive
  KEYS[17] jobEvents
  KEYS[18] jobMarker
  KEYS[19..] more    the other partitions' keys, nine each as KEYS[1..9], in the order of
                     ARGV[16..]; then the claims, as ingestEvents' KEYS[10..]

  ARGV[1] keepMs       as ingestEvents
  ARGV[2] now          as ingestEvents
  ARGV[3] events       as ingestEvents
  ARGV[4] fanoutCap    as ingestEvents
  ARGV[5] retentionMs  as ingestEvents
  ARGV[6] idPrefix     as ingestEvents
  ARGV[7] matchers     as ingestEvents
  ARGV[8] handoff      as ingestEvents (the outbox entries of the waits it does not hand out)
  ARGV[9] matchUpTo    as ingestEvents
  ARGV[10] windowMs    as ingestEvents
  ARGV[11] dedup       as ingestEvents, for the events of every partition of the call (the
                       first's, then each other's in order)
  ARGV[12] jobArgs     BullMQ's job arguments as far as the job id: a MessagePack array of 4 and
                       the queue's key prefix ("<prefix>:<queue>:")
  ARGV[13] jobQueue    the queue's name (continuation_dispatched's queue)
  ARGV[14] jobOpts     BullMQ's job options for the queue as far as the job id's value: a
                       MessagePack map whose last entry is `jobId`, its value left out
  ARGV[15] jobTenant   the encoded tenant: the jobs are added for its waits only
  ARGV[16..] others    the other partitions, three arguments each (none for none): keepMs,
                       idPrefix and events, as ARGV[1], ARGV[6] and ARGV[3]

  Returns C_CONFLICT as ingestEvents (nothing written), else one reply per partition, in
  order: ingestEvents' reply, where it added jobs { streamId, codes, records, matches,
  handed, added } (handed the outbox entries handed over, possibly none, added the number
  of jobs added).
]]
--@include "codes"
--@include "claims"
--@include "accept-events"
--@include "continuation-jobs"

--@keys
-- each partition's keys, ARGV as acceptRows reads it, and events; the call's event keys
local parts = { { keys, ARGV, unpackRows(ARGV[3], 2) } }
local eventKeys, claimKeys = parts[1][3][1], keys.more
local others = (#ARGV - 15) / 3
if others > 0 then
  local more = keys.more
  eventKeys = { unpack(eventKeys) }
  for i = 1, others do
    local b, a = 9 * (i - 1), 13 + 3 * i
    local k = {
      stream = more[b + 1], events = more[b + 2], expiry = more[b + 3], waits = more[b + 4], waiting = more[b + 5],
      done = more[b + 6], deadlines = more[b + 7], inbox = more[b + 8], outbox = more[b + 9],
    }
    local rows = unpackRows(ARGV[a + 2], 2)
    parts[i + 1] = { k, { ARGV[a], ARGV[2], "", ARGV[4], ARGV[5], ARGV[a + 1], ARGV[7], ARGV[8], ARGV[9] }, rows }
    for _, eventKey in ipairs(rows[1]) do
      eventKeys[#eventKeys + 1] = eventKey
    end
  end
  claimKeys = { unpack(more, 9 * others + 1) }
end
if not claimEventKeys(claimKeys, eventKeys, ARGV[11], ARGV[10], ARGV[2]) then
  return C_CONFLICT
end
local jobs = {
  added = 0,
  keys = { keys.jobWait, keys.jobPaused, keys.jobMeta, keys.jobId, keys.jobCompleted, keys.jobDelayed, keys.jobActive, keys.jobEvents, keys.jobMarker },
  args = ARGV[12],
  queue = ARGV[13],
  opts = ARGV[14],
  tenant = ARGV[15],
}
handOff = jobHandOff(jobs)
local replies = {}
for i, part in ipairs(parts) do
  jobs.added = 0
  replies[i] = acceptRows(part[1], part[2], part[3], nil, jobs)
end
return replies
