--[[
  ingestDispatchEvents: ingestEvents (claims, append, match in one step on a single
  Redis) that also adds the continuation jobs of the waits it resolves, in place of their
  outbox entries (continuation-jobs.lua): the resolution and its job in one step, with no
  round trip of the dispatcher's between them (docs/architecture.md, "Continuations added
  in the accept"). `rendezvous start` only, not tracing, no failpoint armed, for a tenant
  whose continuations all go to its own queue (no webhook, no continuation groups). The
  script's text is loaded with BullMQ's addStandardJob put before it as `local function
  addOne(KEYS, ARGV)` (packages/workers/src/job-adds.ts): without it, it is never run.

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
  KEYS[19..] claims  as ingestEvents' KEYS[10..]

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
  ARGV[11] dedup       as ingestEvents
  ARGV[12] jobArgs     BullMQ's job arguments as far as the job id: a MessagePack array of 4 and
                       the queue's key prefix ("<prefix>:<queue>:")
  ARGV[13] jobQueue    the queue's name (continuation_dispatched's queue)
  ARGV[14] jobOpts     BullMQ's job options for the queue as far as the job id's value: a
                       MessagePack map whose last entry is `jobId`, its value left out
  ARGV[15] jobTenant   the encoded tenant: the jobs are added for its waits only

  Returns ingestEvents' reply; where it added jobs, { streamId, codes, records, matches,
  handed, added }: handed the outbox entries handed over (possibly none), added the number
  of jobs added.
]]
--@include "codes"
--@include "claims"
--@include "accept-events"
--@include "continuation-jobs"

--@keys
local events = unpackRows(ARGV[3], 2)
if not claimEventKeys(keys.claims, events[1], ARGV[11], ARGV[10], ARGV[2]) then
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
return acceptRows(keys, ARGV, events, nil, jobs)
