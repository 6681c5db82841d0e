--[[
  The continuation jobs the accept adds itself (ingestDispatchEvents: `rendezvous start` on
  a single Redis, docs/architecture.md "Continuations added in the accept"): settle.lua's
  `handOff` for the script. Each wait the step resolves that is the call's tenant's and has
  a view here (wait-view.lua) gets its job from BullMQ's own addStandardJob, as the
  dispatcher's step would add it (job id = wait id, name `continuation`, data = the Wait,
  BullMQ's own options for the tenant's queue), and its continuation_dispatched entry on
  the timeline it is stored with; it then has no outbox entry. Any other wait (one
  registered with a trace context among them), or a job BullMQ refuses, gets its outbox
  entry, and the dispatcher hands it out as ever.
  `addOne(KEYS, ARGV)` is BullMQ's script as a function, put before the script's text
  where it is loaded (packages/workers/src/job-adds.ts); no other script includes this.
]]
--@include "wait-record"
--@include "wait-view"

-- The hand-off for `jobs` = { keys: BullMQ's 9 keys of the queue, args: a job's packed
-- arguments as far as its id, queue: the queue's name, opts: BullMQ's packed job options as
-- far as the job id's value (a MessagePack array and map, their other items packed once by the
-- process: packages/workers/src/accept-jobs.ts), tenant: the encoded tenant, the prefix of its
-- waits' match keys, added: the jobs added so far (counted here) }.
local function jobHandOff(jobs)
  local pack = cmsgpack.pack
  local name = pack("continuation")
  -- the job's timestamp as text, as BullMQ stores it (a number argument would go through
  -- Redis's "%.17g"): the last resolution time's, which is mostly every job's of the call
  local atMs, atPacked = nil, nil
  return function(waitId, wait)
    -- (a wait registered with a trace context: its job carries the context on, the
    -- dispatcher's way)
    if not ownedBy(wait, jobs.tenant) or (wait["tc"] ~= nil and wait["tc"] ~= "") then
      return false
    end
    local data = waitViewJson(waitId, wait)
    if data == nil then
      return false
    end
    local at = wait["res"]["at"]
    if at ~= atMs then
      atMs, atPacked = at, pack(intText(at))
    end
    local id = pack(waitId)
    -- (a job BullMQ refuses, or a script error in it, leaves the wait to the dispatcher)
    local ok, reply = pcall(addOne, jobs.keys, { jobs.args .. id .. name .. atPacked, data, jobs.opts .. id })
    if not ok or (type(reply) == "number" and reply < 0) then
      return false
    end
    pushHistory(wait, { w = "continuation_dispatched", at = at, queue = jobs.queue, jobId = waitId })
    jobs.added = jobs.added + 1
    return true
  end
end
