--[[
  The continuation jobs the accept adds itself (ingestDispatchEvents: `rendezvous start` on
  a single Redis, docs/architecture.md "Continuations added in the accept"). The outbox
  entries the accept delivered to this process's dispatcher consumer are taken here where
  their wait is the call's tenant's and has a view here (wait-view.lua): BullMQ's own
  addStandardJob adds the job as the dispatcher's step would (job id = wait id, name
  `continuation`, data = the Wait, BullMQ's own options for the tenant's queue), the
  wait's continuation_dispatched entry goes on its timeline, and the entry is
  acknowledged. Any other entry stays delivered to the dispatcher, which hands it out as
  ever. `addOne(KEYS, ARGV)` is BullMQ's script as a function, put before the script's
  text where it is loaded (packages/workers/src/job-adds.ts); no other script includes this.
]]
--@include "clock"
--@include "wait-record"
--@include "annotate"
--@include "wait-view"

-- Takes the delivered outbox `entries` (as XREADGROUP gives them) of the partition whose
-- waits hash is `waitsKey` and outbox `outboxKey` (`group`: the dispatchers' group);
-- `jobs` = { keys: BullMQ's 9 keys of the queue, prefix: the queue's key prefix (its
-- jobs' args), queue: its name, opts: BullMQ's packed job options, whatever their job
-- id, tenant: the encoded tenant, the prefix of its waits' match keys }. Returns the
-- entries left to the dispatcher (nil: none) and the number of jobs added.
local function addContinuationJobs(waitsKey, outboxKey, group, entries, jobs, now)
  local opts = cmsgpack.unpack(jobs.opts)
  local head = '{"w":"continuation_dispatched","at":' .. intText(now)
  local detailHead = '{"queue":' .. cjson.encode(jobs.queue) .. ',"jobId":'
  local left, acked = {}, {}
  for _, entry in ipairs(entries) do
    local fields = entry[2]
    local waitId, record
    for i = 1, #fields, 2 do
      if fields[i] == "w" then
        waitId = fields[i + 1]
      elseif fields[i] == "r" then
        record = fields[i + 1]
      end
    end
    local data = nil
    if waitId and record then
      local wait = decodeWait(record)
      if ownedBy(wait, jobs.tenant) then
        data = waitViewJson(waitId, wait)
      end
    end
    local added = false
    if data then
      opts["jobId"] = waitId
      -- (a job BullMQ refuses, or a script error, leaves the entry to the dispatcher)
      local ok, reply = pcall(addOne, jobs.keys, { cmsgpack.pack({ jobs.prefix, waitId, "continuation", now }), data, cmsgpack.pack(opts) })
      added = ok and not (type(reply) == "number" and reply < 0)
    end
    if added then
      annotateOne(waitsKey, waitId, "continuation_dispatched", head, detailHead .. cjson.encode(waitId) .. "}", now, true)
      acked[#acked + 1] = entry[1]
    else
      left[#left + 1] = entry
    end
  end
  if #acked > 0 then
    redis.call("XACK", outboxKey, group, unpack(acked))
  end
  return #left > 0 and left or nil, #acked
end
