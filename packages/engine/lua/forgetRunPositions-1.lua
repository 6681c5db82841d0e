--[[
  forgetRunPositions: in the partition of a RUN KEY, removes the run-index entries of
  waits that expired (their records are gone after retention), so the run index does
  not grow for ever. An entry is removed only while it still names the expired
  wait's partition (a run position names one wait id per partition).

  KEYS[1] runs      {p}:r  lex zset "<run position><partition tag><defHash>" (includes/run-index.lua)

  ARGV[1..] pairs   runPosition (fixed length), partition tag of the expired wait

  Returns { OK, removed }
]]
--@include "codes"
--@include "run-index"

--@keys
local removed = 0
for i = 1, #ARGV, 2 do
  local runPosition, tag = ARGV[i], ARGV[i + 1]
  local found = runMember(keys.runs, runPosition)
  if found and runMemberParts(found, runPosition, #tag) == tag then
    removed = removed + redis.call("ZREM", keys.runs, found)
  end
end
return { C_OK, removed }
