--[[
  compactContinuations: reduces completed continuation jobs of one BullMQ queue to what a
  re-dispatch's twin check and a listing need (docs/api.md, Continuations). All keys of a
  BullMQ queue share its slot (`<prefix>:<queue>:…`, the prefix a hash tag on a cluster),
  so one call is atomic over them; a job's own key is named from ARGV[1] and the job id,
  as BullMQ's own scripts name them.

  A compacted job keeps its key (BullMQ's add with the same job id finds it and adds
  nothing) and its `completed` membership (BullMQ still removes it by age), and of its
  hash: name, data = {"compacted":true} (the job id is the wait id), timestamp, processedOn,
  finishedOn, atm. The rest (the Wait, the options with their telemetry, the host's
  returnvalue, ats, pb, delay, priority) goes: BullMQ reads a missing field as its default.
  The hash is written anew (DEL, HSET): every value then fits a listpack, which a hash once
  made a hashtable does not return to (about 220 bytes instead of 1,900 for a typical Wait).

  The jobs are taken in the order of `completed` (by finish time), from just after the
  cursor's member (its rank, or where its score would be once it is gone), while their
  finish time is at most ARGV[2], at most ARGV[3] of them. A job already compacted (it has
  no `opts`: BullMQ writes them on every job), or whose hash is gone, or that is no
  `continuation` job, is passed over unchanged. The Wait is never read into the script,
  nor the scores of the jobs but the last one's (the cursor).

  Late finishers: a finish time is stamped by the host worker's clock, so a job can enter
  `completed` behind the cursor (a clock behind, a finish in the cursor's millisecond). Each
  call therefore also walks a trailing window, at most ARGV[3] more jobs: from the cursor's
  finish time less ARGV[4] (the skew assumed), but not below `now - skew` of the call that
  began the previous walk (a job entering since has a finish time at or above it), up to the
  cursor as it was before the call. A walk spans calls (the cursor hash's `wpos`; `wbegan`
  its start, `wlow` the bound it leaves for the next); jobs already compacted cost an HEXISTS.
  A host clock more than the skew behind leaves its jobs whole until BullMQ removes them.

  KEYS[1] completed  <prefix>:<queue>:completed     zset jobId -> finishedOn (BullMQ's)
  KEYS[2] cursor     <prefix>:<queue>:rdv:compacted hash score, member: the last job passed;
                                                      wpos, wbegan, wlow: the trailing walk

  ARGV[1] jobPrefix  <prefix>:<queue>:  (a job's key is jobPrefix .. jobId)
  ARGV[2] upTo       ms: only jobs finished at or before it
  ARGV[3] limit      most jobs examined ahead of the cursor, and most behind it
  ARGV[4] skewMs     ms: how far behind the cursor a late finisher is looked for
  ARGV[5] now        ms: the caller's clock

  Returns
    { compacted (ahead and behind), examined (ahead), more (1 = a job past the limit is due
      too), rescanned (jobs examined behind the cursor) }
]]
--@keys
local jobPrefix, upTo, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local skew, now = tonumber(ARGV[4]), tonumber(ARGV[5])
local STUB = '{"compacted":true}'
local NAMES = { "timestamp", "processedOn", "finishedOn", "atm" }

-- reduces the continuation jobs among `ids` not yet compacted; how many it reduced
-- (`mostlyDone`: most of them are compacted already, the trailing walk's case: each is
-- first asked whether it still has `opts`, a reply of one integer instead of six fields)
local function compact(ids, mostlyDone)
  local n = 0
  for _, id in ipairs(ids) do
    local key = jobPrefix .. id
    if not mostlyDone or redis.call("HEXISTS", key, "opts") == 1 then
      local f = redis.call("HMGET", key, "name", "opts", "timestamp", "processedOn", "finishedOn", "atm")
      if f[1] == "continuation" and f[2] then
        redis.call("DEL", key)
        local kept = { "name", f[1], "data", STUB }
        for j = 1, 4 do
          if f[j + 2] then
            kept[#kept + 1] = NAMES[j]
            kept[#kept + 1] = f[j + 2]
          end
        end
        redis.call("HSET", key, unpack(kept))
        n = n + 1
      end
    end
  end
  return n
end

local cursor = redis.call("HMGET", keys.cursor, "score", "member", "wpos", "wbegan", "wlow")
local from = 0
if cursor[2] then
  local rank = redis.call("ZRANK", keys.completed, cursor[2])
  if rank then
    from = rank + 1
  else
    -- the cursor's job was removed (by age): start at the first job of its finish time
    from = redis.call("ZCOUNT", keys.completed, "-inf", "(" .. cursor[1])
  end
end

local compacted, examined = 0, 0

-- behind the cursor (ranks below `from`, as they are before this call's moves)
if cursor[2] then
  local low = tonumber(cursor[1]) - skew
  if cursor[5] and tonumber(cursor[5]) > low then
    low = tonumber(cursor[5])
  end
  local start = redis.call("ZCOUNT", keys.completed, "-inf", "(" .. low)
  if cursor[3] then
    local rank = redis.call("ZRANK", keys.completed, cursor[3])
    if rank and rank + 1 > start then
      start = rank + 1
    end
  end
  local began = cursor[4] or tostring(now - skew)
  local stop = math.min(from, start + limit) - 1
  if stop >= start then
    local ids = redis.call("ZRANGE", keys.completed, start, stop)
    compacted = compacted + compact(ids, true)
    examined = examined + #ids
  end
  if stop < start and not cursor[3] then
    -- nothing behind the cursor and no walk under way: nothing to write
  elseif stop + 1 >= from then
    -- the walk reached the cursor: the next begins at this one's start, less the skew
    redis.call("HDEL", keys.cursor, "wpos", "wbegan")
    redis.call("HSET", keys.cursor, "wlow", began)
  else
    redis.call("HSET", keys.cursor, "wpos", redis.call("ZRANGE", keys.completed, stop, stop)[1], "wbegan", began)
  end
end

-- ahead of the cursor: the jobs due are the ranks below `due`; one past the limit tells whether more are due
local due = redis.call("ZCOUNT", keys.completed, "-inf", upTo)
local to = math.min(due, from + limit) - 1
if to < from then
  return { compacted, 0, 0, examined }
end
local ids = redis.call("ZRANGE", keys.completed, from, to)
compacted = compacted + compact(ids)
local last = ids[#ids]
redis.call("HSET", keys.cursor, "score", redis.call("ZSCORE", keys.completed, last), "member", last)
return { compacted, #ids, (to + 1 < due) and 1 or 0, examined }
